// `npm run bench [-- --quick] [-- --only NAME] [-- --node 20,24]`: every entry prints its figure, the
// baseline it was measured against in this same run, and the ratio. Machines are shared and noisy:
// compare ratios. `--node` runs the suite once per Node.js line (scripts/with-node.sh: the service,
// its baselines and the load generator all on that line) and ends with a table of the lines side by side.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { benchTokenEndpoint } from './token.js';
import { benchIngest } from './ingest.js';
import { benchDelivery } from './delivery.js';
import { benchBacklog } from './backlog.js';
import { benchScaleOut } from './scale-out.js';
import { benchRecovery } from './recovery.js';
import { benchStats } from './stats.js';
import { benchPeers } from './peers.js';
import { benchSoak } from './soak.js';
import { benchNoisyNeighbour } from './noisy-neighbour.js';
import { benchCircuitBreaker } from './circuit-breaker.js';
import { benchRetention } from './retention.js';
import { benchStatements } from './statements.js';
import { benchReadReplica } from './read-replica.js';
import { pinLoadGenerator, PINNING, waitForQuietMachine, type BenchOptions, type BenchRow } from './lib.js';

/** `pinned`: this process (the load generator) on core 0 and the servers it starts on core 1 (see lib.ts). */
type Entry = { name: string; pinned: boolean; run: (options: BenchOptions) => Promise<BenchRow[]>; onlyWhenNamed?: boolean };

const ENTRIES: Entry[] = [
  { name: 'token', pinned: true, run: benchTokenEndpoint },
  { name: 'ingest', pinned: true, run: benchIngest },
  { name: 'delivery', pinned: false, run: benchDelivery },
  { name: 'backlog', pinned: false, run: benchBacklog },
  { name: 'statements', pinned: false, run: benchStatements },
  { name: 'scale-out', pinned: false, run: benchScaleOut },
  { name: 'recovery', pinned: false, run: benchRecovery },
  { name: 'stats', pinned: false, run: benchStats },
  { name: 'noisy-neighbour', pinned: false, run: benchNoisyNeighbour },
  { name: 'circuit-breaker', pinned: false, run: benchCircuitBreaker },
  { name: 'peers', pinned: false, run: benchPeers },
  { name: 'read-replica', pinned: false, run: benchReadReplica },
  // Half an hour: only when named (`--only soak`).
  { name: 'soak', pinned: false, run: benchSoak, onlyWhenNamed: true },
  // An hour with 10,000,000 notifications: only when named (`--only retention`).
  { name: 'retention', pinned: false, run: benchRetention, onlyWhenNamed: true },
];

const args = process.argv.slice(2);
const flagValue = (flag: string) => (args.includes(flag) ? args[args.indexOf(flag) + 1] : undefined);
const nodeLines = flagValue('--node')?.split(',');
if (nodeLines)
  process.exit(
    compareNodeLines(
      nodeLines,
      args.filter((arg, i) => arg !== '--node' && args[i - 1] !== '--node'),
    ),
  );

/** Runs this suite once per Node.js line, each in its own process, then prints their rows side by side; returns the exit code. */
function compareNodeLines(lines: string[], suiteArgs: string[]): number {
  const root = new URL('..', import.meta.url).pathname;
  const dir = mkdtempSync(join(tmpdir(), 'rewards-bench-lines-'));
  const results: { line: string; version: string; rows: BenchRow[] }[] = [];
  for (const line of lines) {
    const rowsFile = join(dir, `${line}.json`);
    process.stderr.write(`\n=== Node.js ${line} ===\n`);
    const run = spawnSync('bash', [join(root, 'scripts/with-node.sh'), line, 'node', '--import', 'tsx', join(root, 'bench/run.ts'), ...suiteArgs], {
      stdio: 'inherit',
      env: { ...process.env, BENCH_ROWS_FILE: rowsFile },
    });
    if (run.status !== 0 && run.status !== 1) throw new Error(`the suite on Node.js ${line} failed (exit ${run.status})`);
    results.push({ line, ...(JSON.parse(readFileSync(rowsFile, 'utf8')) as { version: string; rows: BenchRow[] }) });
  }
  rmSync(dir, { recursive: true, force: true });
  console.log(`\n| entry | ${results.map((r) => `${r.version}: figure | ratio`).join(' | ')} |`);
  console.log(`|---|${results.map(() => '---|---').join('|')}|`);
  for (const [index, row] of results[0]!.rows.entries()) {
    const cells = results.map((r) => {
      const same = r.rows[index];
      return same && same.entry === row.entry ? `${same.figure} | ${same.ratio.toFixed(2)}` : '— | —';
    });
    console.log(`| ${row.entry} | ${cells.join(' | ')} |`);
  }
  return results.some((r) => r.rows.some((row) => row.required && !row.met)) ? 1 : 0;
}

const options: BenchOptions = { quick: args.includes('--quick'), postgresUrl: process.env.BENCH_POSTGRES_URL };
const only = flagValue('--only')?.split(',');

process.stderr.write(PINNING ? 'pinning: token and ingest run with the load generator on core 0 and the servers on core 1 (BENCH_PIN=0 to turn off)\n' : 'pinning: off\n');

/** A skipped entry has no ratio. */
const ratioText = (row: BenchRow) => (Number.isNaN(row.ratio) ? '—' : row.ratio.toFixed(2));

const rows: BenchRow[] = [];
const suiteStarted = performance.now();
for (const entry of ENTRIES) {
  if (only ? !only.includes(entry.name) : entry.onlyWhenNamed) continue;
  process.stderr.write(`running ${entry.name}…\n`);
  pinLoadGenerator(entry.pinned);
  await waitForQuietMachine({ postgresUrl: options.postgresUrl });
  const started = performance.now();
  const produced = await entry.run(options);
  process.stderr.write(`${entry.name} took ${((performance.now() - started) / 1000).toFixed(0)} s\n`);
  for (const row of produced) {
    rows.push(row);
    const goal = row.goal ? ` goal ${row.goal} ${row.met ? 'MET' : row.required ? 'FAILED' : 'MISSED'}` : '';
    console.log(`${row.entry}: ${row.figure} | baseline: ${row.baseline} | ratio ${ratioText(row)}${goal}`);
  }
}
console.log('\n| entry | figure | baseline | ratio | goal |\n|---|---|---|---|---|');
for (const row of rows) console.log(`| ${row.entry} | ${row.figure} | ${row.baseline} | ${ratioText(row)} | ${row.goal ? `${row.goal} ${row.met ? '✅' : '❌'}` : ''} |`);
console.log(`\nwhole suite: ${((performance.now() - suiteStarted) / 1000).toFixed(0)} s on Node.js ${process.version}`);
if (process.env.BENCH_ROWS_FILE) writeFileSync(process.env.BENCH_ROWS_FILE, JSON.stringify({ version: process.version, rows }));
const failed = rows.filter((row) => row.required && !row.met);
for (const row of failed) console.log(`FAILED check: ${row.entry}: ratio ${row.ratio.toFixed(2)}, required ${row.goal}`);
process.exit(failed.length > 0 ? 1 : 0);
