// The `rewards` executable (bin/rewards.js): the V8 flags first, then the commands of program.ts.
import './v8-flags.js';
import { runCli } from './program.js';

process.exitCode = await runCli(process.argv.slice(2));
