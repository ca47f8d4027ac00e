import { setFlagsFromString } from 'node:v8';

/**
 * V8 settings for the `rewards` processes; imported first by the CLI, before the service allocates
 * anything of note.
 *
 * Allocation-site pretenuring off: V8 decides per allocation site, from what survived the last
 * scavenges, to allocate its objects straight in the old generation. Under steady load that
 * guess sometimes went wrong for the short-lived objects of a request, and stayed wrong: the
 * process then kept running major GCs and spent far more CPU per request; which processes did
 * depended only on how their start went. With the setting off none does, so every process
 * performs alike (`npm run bench -- --only token`, repeated; docs/benchmarks.md).
 * The objects that live long here are few (caches, keys), so promoting them the usual way costs
 * nothing visible.
 *
 * The flag exists in the V8 of Node 20, 22 and 24. V8 answers an unknown one with
 * `Error: unrecognized flag` on stderr and goes on; test/node-line.test.ts fails on that line.
 */
setFlagsFromString('--no-allocation-site-pretenuring');
