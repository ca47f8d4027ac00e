// `npm run bench [-- --quick] [-- --only NAME]`: every entry prints its figure, the baseline it was
// measured against in this same run, and the ratio. Machines are shared and noisy: compare ratios.
import { benchTokenEndpoint } from './token.js';
import { benchIngest } from './ingest.js';
import { benchDelivery } from './delivery.js';
import { benchBacklog } from './backlog.js';
import { benchScaleOut } from './scale-out.js';
import { pinLoadGenerator, PINNING, waitForQuietMachine, type BenchOptions, type BenchRow } from './lib.js';

/** `pinned`: this process (the load generator) on core 0 and the servers it starts on core 1 (see lib.ts). */
type Entry = { name: string; pinned: boolean; run: (options: BenchOptions) => Promise<BenchRow[]> };

const ENTRIES: Entry[] = [
  { name: 'token', pinned: true, run: benchTokenEndpoint },
  { name: 'ingest', pinned: true, run: benchIngest },
  { name: 'delivery', pinned: false, run: benchDelivery },
  { name: 'backlog', pinned: false, run: benchBacklog },
  { name: 'scale-out', pinned: false, run: benchScaleOut },
];

const args = process.argv.slice(2);
const options: BenchOptions = { quick: args.includes('--quick'), postgresUrl: process.env.BENCH_POSTGRES_URL };
const only = args.includes('--only') ? args[args.indexOf('--only') + 1]?.split(',') : undefined;

process.stderr.write(PINNING ? 'pinning: token and ingest run with the load generator on core 0 and the servers on core 1 (BENCH_PIN=0 to turn off)\n' : 'pinning: off\n');

const rows: BenchRow[] = [];
const suiteStarted = performance.now();
for (const entry of ENTRIES) {
  if (only && !only.includes(entry.name)) continue;
  process.stderr.write(`running ${entry.name}…\n`);
  pinLoadGenerator(entry.pinned);
  await waitForQuietMachine();
  const started = performance.now();
  const produced = await entry.run(options);
  process.stderr.write(`${entry.name} took ${((performance.now() - started) / 1000).toFixed(0)} s\n`);
  for (const row of produced) {
    rows.push(row);
    const goal = row.goal ? ` goal ${row.goal} ${row.met ? 'MET' : 'MISSED'}` : '';
    console.log(`${row.entry}: ${row.figure} | baseline: ${row.baseline} | ratio ${row.ratio.toFixed(2)}${goal}`);
  }
}
console.log('\n| entry | figure | baseline | ratio | goal |\n|---|---|---|---|---|');
for (const row of rows) console.log(`| ${row.entry} | ${row.figure} | ${row.baseline} | ${row.ratio.toFixed(2)} | ${row.goal ? `${row.goal} ${row.met ? '✅' : '❌'}` : ''} |`);
console.log(`\nwhole suite: ${((performance.now() - suiteStarted) / 1000).toFixed(0)} s`);
process.exit(0);
