import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { SERVICE_ENV } from './harness.js';
import type { Storage } from '../src/storage/database.js';
import {
  checkBooks,
  createEnvironment,
  kill9,
  openLoopLoad,
  setUpTenant,
  startService,
  stopGracefully,
  waitForQuiescence,
  type Books,
  type Dialect,
  type Environment,
  type Service,
} from './harness.js';
import { startChaosReceiver, type Answer, type ChaosReceiver } from './receiver.js';
import { FAILOVER_SCENARIOS } from './failover.js';

interface RunOptions {
  /** Seconds of load (the faults happen during it). */
  seconds: number;
  /** Requests per second. */
  rate: number;
  postgresUrl: string | undefined;
  /** `--short`: CI's variant, each run as brief as it can be and still show its fault. */
  short: boolean;
}

export interface Outcome extends Books {
  scenario: string;
  dialect: Dialect;
  /** Answers other than 202, by status. */
  refused: string;
  /** What the scenario itself observed (faults injected, readiness seen). */
  notes: string[];
  /** Named measurements of the run (seconds, counts); `--runs N` prints their medians. */
  figures?: Record<string, number>;
}

export interface Scenario {
  name: string;
  dialects: Dialect[];
  /** Requests per second when `--rate` is not given (else 300, or 100 with --short). */
  rate?: number;
  /** Seconds of load (or before the fault) when neither `--seconds` nor `--short` is given (else 60). */
  seconds?: number;
  /** Why it cannot run here, if it cannot (not root, no pg_ctlcluster). */
  unavailable?(): string | undefined;
  run(options: RunOptions, dialect: Dialect): Promise<Outcome>;
}

const randomBetween = (min: number, max: number) => min + Math.random() * (max - min);
const isRoot = () => process.getuid?.() === 0;

/**
 * The common shape of a run: a fresh database, a receiver, the service, a tenant; load with the
 * fault injected meanwhile; the service brought back to health; quiescence; the books.
 */
async function withRun(
  name: string,
  dialect: Dialect,
  options: RunOptions,
  fault: (context: { environment: Environment; receiver: ChaosReceiver; services: { current: Service[] }; notes: string[]; loadDone: Promise<void> }) => Promise<void>,
  setup: { environment?: Environment; processes?: string[][]; check?: (storage: Storage, outcome: Outcome, receiver: ChaosReceiver) => Promise<void> } = {},
): Promise<Outcome> {
  const environment = setup.environment ?? (await createEnvironment(dialect, options.postgresUrl));
  const receiver = await startChaosReceiver();
  const notes: string[] = [];
  const layout = setup.processes ?? [[]];
  const services = { current: [] as Service[] };
  try {
    for (const args of layout) services.current.push(await startService(environment, args));
    const api = () => services.current.filter((_, i) => !layout[i]!.includes('worker')).map((s) => s.url);
    const tenant = await setUpTenant(environment, api()[0]!, receiver, Math.round((options.rate * options.seconds) / 3));
    let loadFinished!: () => void;
    const loadDone = new Promise<void>((resolve) => (loadFinished = resolve));
    const faults = fault({ environment, receiver, services, notes, loadDone });
    const load = await openLoopLoad(api, tenant.token, options.rate, options.seconds);
    loadFinished();
    await faults;
    const storage = environment.storage();
    try {
      await waitForQuiescence(storage, load.acknowledged, receiver, Math.max(60_000, options.seconds * 4_000));
      const books = await checkBooks(storage, load, receiver, tenant);
      const unexpected = [...load.refused].filter(([status]) => status >= 500 && status !== 503);
      if (unexpected.length > 0) books.problems.push(`answers other than 202 and 503 under faults: ${JSON.stringify(unexpected)}`);
      if (notes.some((note) => note.startsWith('PROBLEM: '))) books.problems.push(...notes.filter((note) => note.startsWith('PROBLEM: ')).map((note) => note.slice(9)));
      const outcome: Outcome = { scenario: name, dialect, ...books, refused: JSON.stringify(Object.fromEntries(load.refused)), notes };
      await setup.check?.(storage, outcome, receiver);
      // The faults replace what they kill: a current process that has exited did so by itself.
      for (const service of services.current) {
        if (service.process.exitCode === null && service.process.signalCode === null) continue;
        const last = service
          .output()
          .split('\n')
          .filter((line) => line !== '' && !line.startsWith('{"level":30'))
          .slice(-30);
        outcome.problems.push(`a service process exited by itself (${service.process.exitCode ?? service.process.signalCode}): ${last.map((line) => line.slice(0, 800)).join(' | ')}`);
      }
      if (outcome.problems.length > 0) {
        const errors = services.current.flatMap((service) =>
          service
            .output()
            .split('\n')
            .filter((line) => /"level":50/.test(line)),
        );
        if (errors.length > 0) outcome.notes.push(`first error logged: ${errors[0]!.slice(0, 600)}`);
      }
      return outcome;
    } finally {
      await storage.close();
    }
  } finally {
    for (const service of services.current) await stopGracefully(service);
    await receiver.close();
    if (!setup.environment) await environment.cleanup();
  }
}

/** SIGKILL the whole service (SQLite: one process) at random moments, and start it again. */
const killService: Scenario = {
  name: 'kill -9 the service',
  dialects: ['sqlite'],
  run: (options, dialect) =>
    withRun('kill -9 the service', dialect, options, async ({ environment, services, notes, loadDone }) => {
      let kills = 0;
      let done = false;
      void loadDone.then(() => (done = true));
      while (!done) {
        await sleep(randomBetween(400, 1500));
        if (done) break;
        const [victim] = services.current;
        const port = Number(new URL(victim!.url).port);
        await kill9(victim!);
        kills += 1;
        services.current = [await startService(environment, [], port)];
      }
      notes.push(`${kills} SIGKILLs`);
    }),
};

/** PostgreSQL: one API and two workers; SIGKILL one of the workers at random moments and start it again. */
const killWorker: Scenario = {
  name: 'kill -9 one of two workers',
  dialects: ['postgres'],
  run: (options, dialect) =>
    withRun(
      'kill -9 one of two workers',
      dialect,
      options,
      async ({ environment, services, notes, loadDone }) => {
        let kills = 0;
        let done = false;
        void loadDone.then(() => (done = true));
        while (!done) {
          await sleep(randomBetween(400, 1500));
          if (done) break;
          const index = 1 + Math.floor(Math.random() * 2);
          await kill9(services.current[index]!);
          kills += 1;
          services.current[index] = await startService(environment, ['--role', 'worker']);
        }
        notes.push(`${kills} SIGKILLs`);
      },
      {
        processes: [
          ['--role', 'api'],
          ['--role', 'worker'],
          ['--role', 'worker'],
        ],
      },
    ),
};

/** PostgreSQL stopped under the service and started again: the service reconnects by itself, /health/ready says so meanwhile. */
const restartPostgres: Scenario = {
  name: 'PostgreSQL restarted',
  dialects: ['postgres'],
  unavailable: () => (!isRoot() ? 'needs root to run pg_ctlcluster' : undefined),
  run: (options, dialect) =>
    withRun('PostgreSQL restarted', dialect, options, async ({ services, notes }) => {
      await sleep((options.seconds * 1000) / 3);
      const url = services.current[0]!.url;
      execFileSync('pg_ctlcluster', ['15', 'main', 'stop', '-m', 'fast'], { stdio: 'ignore' });
      const down = Date.now();
      const ready = await fetch(`${url}/health/ready`)
        .then((r) => r.status)
        .catch(() => 0);
      notes.push(`/health/ready while PostgreSQL was down: ${ready}`);
      if (ready !== 503) notes.push('PROBLEM: readiness did not say 503 while the database was away');
      await sleep(1500);
      execFileSync('pg_ctlcluster', ['15', 'main', 'start'], { stdio: 'ignore' });
      for (
        let i = 0;
        i < 100 &&
        (await fetch(`${url}/health/ready`)
          .then((r) => r.status)
          .catch(() => 0)) !== 200;
        i++
      )
        await sleep(100);
      notes.push(`down ${((Date.now() - down) / 1000).toFixed(1)} s, ready again`);
    }),
};

/**
 * Receivers that time out, reset, answer 500 or 429 (Retry-After: 1), or stall after their headers
 * (slow-loris), before they answer 204: one notification in ten meets one or two of these. One
 * host takes at most 8 calls at once from a worker, so stalls are what bound how many can be made.
 */
const badReceivers: Scenario = {
  name: 'misbehaving receivers',
  dialects: ['sqlite', 'postgres'],
  run: (options, dialect) =>
    withRun(
      'misbehaving receivers',
      dialect,
      options,
      async ({ receiver, notes, loadDone }) => {
        const misbehaviours: Answer[] = ['500', '429', 'reset', 'timeout', 'slow-loris'];
        receiver.behave(({ webhookId, attempt }) => {
          const [share, times, kind] = createHash('sha256').update(webhookId).digest() as unknown as [number, number, number];
          if (share % 10 !== 0) return 'ok';
          return attempt <= 1 + (times % 2) ? misbehaviours[(kind + attempt) % misbehaviours.length]! : 'ok';
        });
        await loadDone;
        const counts = new Map<Answer, number>();
        for (const call of receiver.calls) counts.set(call.answer, (counts.get(call.answer) ?? 0) + 1);
        notes.push(`answers during the load ${JSON.stringify(Object.fromEntries(counts))}`);
      },
      {
        check: async (storage, outcome, receiver) => {
          const counts = new Map<string, number>();
          // No process was killed here: each call the receiver got is one logged attempt.
          const attempts = await storage.db
            .selectFrom('notification_attempts')
            .select((eb) => eb.fn.countAll<string>().as('n'))
            .executeTakeFirstOrThrow();
          outcome.notes.push(`calls ${receiver.calls.length}, logged attempts ${attempts.n}`);
          if (receiver.calls.length !== Number(attempts.n)) outcome.problems.push(`the receiver got ${receiver.calls.length} calls for ${attempts.n} logged attempts`);
          // A slow-loris or silent receiver holds a delivery slot for CALLBACK_TIMEOUT at most.
          const slowest = await storage.db
            .selectFrom('notification_attempts')
            .select((eb) => eb.fn.max('latency_ms').as('ms'))
            .executeTakeFirst();
          const limit = parseDuration(SERVICE_ENV.CALLBACK_TIMEOUT) + 500;
          outcome.notes.push(`slowest attempt ${slowest?.ms ?? 0} ms (limit ${limit} ms)`);
          if (Number(slowest?.ms ?? 0) > limit) outcome.problems.push(`an attempt took ${slowest?.ms} ms, past CALLBACK_TIMEOUT`);
          for (const row of await storage.db
            .selectFrom('notification_attempts')
            .select(['outcome', (eb) => eb.fn.countAll<string>().as('n')])
            .groupBy('outcome')
            .execute()) {
            counts.set(row.outcome, Number(row.n));
          }
          outcome.notes.push(`attempts by outcome ${JSON.stringify(Object.fromEntries(counts))}`);
        },
      },
    ),
};

const parseDuration = (text: string) => (text.endsWith('ms') ? Number(text.slice(0, -2)) : Number(text.slice(0, -1)) * 1000);

/** SQLite on a small file system that a filler fills up during the load: 503s, nothing corrupted, recovery when space is back. */
const diskFull: Scenario = {
  name: 'disk full',
  dialects: ['sqlite'],
  unavailable: () => (!isRoot() ? 'needs root to mount a tmpfs' : undefined),
  async run(options, dialect) {
    const mount = mkdtempSync(join(tmpdir(), 'rewards-chaos-disk-'));
    // Room for the run's own data (about 8 KiB per request with its notifications, attempts and
    // WAL) plus a margin: only the filler is meant to fill it.
    const sizeMiB = 24 + Math.ceil((options.rate * options.seconds * 8) / 1024);
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMiB}m`, 'tmpfs', mount]);
    try {
      const dataDir = join(mount, 'data');
      mkdirSync(dataDir);
      const environment = await createEnvironment(dialect, undefined, dataDir);
      const outcome = await withRun(
        'disk full',
        dialect,
        options,
        async ({ services, notes }) => {
          await sleep((options.seconds * 1000) / 3);
          // Fill what is left, then keep the space taken for a third of the run.
          const filler = join(mount, 'filler');
          const fd = openSync(filler, 'w');
          const block = Buffer.alloc(1 << 20);
          try {
            for (;;) writeSync(fd, block);
          } catch {
            /* ENOSPC: full */
          } finally {
            closeSync(fd);
          }
          const url = services.current[0]!.url;
          const readiness = () =>
            fetch(`${url}/health/ready`)
              .then((r) => r.status)
              .catch(() => 0);
          // Readiness probes at most once a second: give it that long to see the full disk.
          let whileFull = await readiness();
          for (let i = 0; i < 30 && whileFull !== 503; i++) {
            await sleep(100);
            whileFull = await readiness();
          }
          notes.push(`disk filled; /health/ready said ${whileFull}`);
          if (whileFull !== 503) notes.push('PROBLEM: readiness did not say 503 while the disk was full');
          await sleep((options.seconds * 1000) / 3);
          const stillFull = await readiness();
          if (stillFull !== 503) notes.push(`PROBLEM: readiness said ${stillFull} while the disk was still full`);
          rmSync(filler);
          const freed = Date.now();
          // Back by itself: the probe writes again, and no write was refused for readiness's hold (10 s).
          let after = await readiness();
          while (after !== 200 && Date.now() - freed < 20_000) {
            await sleep(200);
            after = await readiness();
          }
          notes.push(`space back; ready again after ${((Date.now() - freed) / 1000).toFixed(1)} s`);
          if (after !== 200) notes.push('PROBLEM: readiness did not come back within 20 s of the space');
        },
        { environment },
      );
      const storage = environment.storage();
      try {
        const check = await sql<{ integrity_check: string }>`pragma integrity_check`.execute(storage.db);
        const verdict = check.rows.map((row) => row.integrity_check).join(', ');
        outcome.notes.push(`integrity_check: ${verdict}`);
        if (verdict !== 'ok') outcome.problems.push(`the database is corrupt: ${verdict}`);
      } finally {
        await storage.close();
      }
      return outcome;
    } finally {
      execFileSync('umount', ['-l', mount]);
      rmSync(mount, { recursive: true, force: true });
    }
  },
};

export const SCENARIOS: Record<string, Scenario> = {
  'kill-service': killService,
  'kill-worker': killWorker,
  'postgres-restart': restartPostgres,
  'bad-receivers': badReceivers,
  'disk-full': diskFull,
  ...FAILOVER_SCENARIOS,
};
