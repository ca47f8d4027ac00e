#!/usr/bin/env node
// Runs test/**/*.test.ts with Node's test runner through tsx (Node 20's runner does not expand `**`
// itself). SQLite always; PostgreSQL too when TEST_POSTGRES_URL is set; TEST_DATABASES narrows.
//
// Each file says on its first line what it needs (scripts/test-plan.mjs): a file that needs no
// database runs once, however many databases are tested; TEST_SCOPE=every-node-line runs only the
// files that can differ between Node.js lines (CI runs everything on the primary line, those on the
// others).
//
// The files run in TEST_CONCURRENCY (default 4) processes, each importing its share of the files
// one after another: loading the service's modules once per process instead of once per file is
// most of what a small test file costs. A test file therefore leaves no global state behind
// (process.env, process listeners). Files are dealt to the processes by their measured durations
// (test/durations.json, refreshed by `npm run test:durations`), longest first.
// TEST_ISOLATION=file runs each file in a process of its own, as `node --test` does.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { deal, estimate, readNeeds, selectFiles } from './test-plan.mjs';

const root = new URL('..', import.meta.url).pathname;
const args = process.argv.slice(2);
const recording = args.includes('--record-durations');
const filter = args.filter((arg) => !arg.startsWith('--'));
const everyLineOnly = process.env.TEST_SCOPE === 'every-node-line';
const durationsFile = join(root, 'test', 'durations.json');

const wanted = (process.env.TEST_DATABASES ?? 'sqlite,postgres').split(',');
const dialects = ['sqlite', ...(process.env.TEST_POSTGRES_URL ? ['postgres'] : [])].filter((d) => wanted.includes(d));
console.log(`Test databases: ${dialects.join(', ') || 'none (unit tests only)'}${everyLineOnly ? '; only the files that can differ between Node.js lines' : ''}`);

const needs = readNeeds(
  root,
  readdirSync(join(root, 'test'), { recursive: true })
    .map(String)
    .filter((file) => file.endsWith('.test.ts'))
    .sort()
    .map((file) => join('test', file)),
);
const files = selectFiles(needs, { dialects, everyLineOnly }).filter((file) => filter.length === 0 || filter.some((f) => file.includes(f)));
if (recording && (filter.length > 0 || everyLineOnly || dialects.length < 2)) {
  console.error('--record-durations measures the whole suite on both databases: no filter, no TEST_SCOPE, TEST_POSTGRES_URL set.');
  process.exit(2);
}
const durations = existsSync(durationsFile) ? JSON.parse(readFileSync(durationsFile, 'utf8')) : {};
const cost = (file) => estimate(durations, file, dialects);
const chromium = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
if (!existsSync(chromium)) {
  console.log(`Browser tests of the console SKIPPED: no Chromium at ${chromium} (apt-get install -y chromium; .ci/run does).`);
}
if (!process.env.TEST_POSTGRES_URL && wanted.includes('postgres')) {
  console.log('PostgreSQL tests SKIPPED: set TEST_POSTGRES_URL=postgres://user:pass@127.0.0.1:5432/db to run them (.ci/run does).');
}

// This run's id in its test schemas' names (test/support/databases.ts): t_ + 6 hex digits of this
// process's id + 6 random ones.
const runId = (process.pid % 0x1000000).toString(16).padStart(6, '0');

/** Whether the process that ran the test run `id` is still running (000000: schemas made outside a run). */
function runAlive(id) {
  const pid = Number.parseInt(id, 16);
  if (pid === 0 || pid === process.pid) return pid === process.pid;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === 'EPERM';
  }
}

/**
 * Drops the per-test schemas (t_ + 12 hex) of this run (`own`), or of runs no longer running
 * (left by a run that was killed): never those of a run going on beside this one on the same database.
 */
async function dropTestSchemas(own) {
  if (!process.env.TEST_POSTGRES_URL || !dialects.includes('postgres')) return;
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: process.env.TEST_POSTGRES_URL });
  await client.connect();
  try {
    const { rows } = await client.query("select nspname from pg_namespace where nspname ~ '^t_[0-9a-f]{12}$'");
    const doomed = rows.map((row) => row.nspname).filter((name) => (own ? name.slice(2, 8) === runId : !runAlive(name.slice(2, 8))));
    for (const name of doomed) await client.query(`drop schema if exists ${name} cascade`);
  } finally {
    await client.end();
  }
}

/** Shares of the files by their expected durations, each imported in turn by one entry file (in a temporary folder). */
function bundle(folder, list, count) {
  return deal(list, count, cost).map((share, i) => {
    const entry = join(folder, `bundle-${i + 1}.test.mjs`);
    writeFileSync(entry, share.files.map((file) => `await import(${JSON.stringify(pathToFileURL(join(root, file)).href)});\n`).join(''));
    return entry;
  });
}

/** Per file and database, the measured milliseconds and the test cases passed and failed (test-durations-reporter.mjs). */
function readReport(path) {
  const byFile = {};
  const cases = {};
  if (!existsSync(path)) return { byFile, cases };
  for (const line of readFileSync(path, 'utf8').split('\n').filter(Boolean)) {
    const { file, dialect, ms, case: outcome } = JSON.parse(line);
    const name = relative(root, file);
    if (outcome) {
      cases[dialect] ??= { pass: 0, fail: 0 };
      cases[dialect][outcome] += 1;
    } else {
      byFile[name] ??= {};
      byFile[name][dialect] = (byFile[name][dialect] ?? 0) + ms;
    }
  }
  return { byFile, cases };
}

const concurrency = Number(process.env.TEST_CONCURRENCY ?? 4);
const perFile = process.env.TEST_ISOLATION === 'file' || files.length <= 1;
const folder = mkdtempSync(join(tmpdir(), 'rewards-test-bundles-'));
const entries = perFile ? files : bundle(folder, files, concurrency);
const report = join(folder, 'report.ndjson');

await dropTestSchemas(false);
// A test that fails before it stops what it started (a worker, a server) can leave handles open,
// and its process then never ends (--test-force-exit is no cure: with the files of a bundle
// imported one after the other, it ends the bundle after its first file; and --test-timeout bounds
// a whole bundle, not a test). So a whole run that outlives TEST_RUN_LIMIT_MINUTES (default 30)
// is ended, its processes with it, and fails with a message saying so.
const limitMs = Number(process.env.TEST_RUN_LIMIT_MINUTES ?? 30) * 60_000;
const child = spawn(
  process.execPath,
  [
    '--import',
    'tsx',
    '--test',
    '--test-reporter=spec',
    '--test-reporter-destination=stdout',
    `--test-reporter=${join(root, 'scripts', 'test-durations-reporter.mjs')}`,
    `--test-reporter-destination=${report}`,
    `--test-concurrency=${concurrency}`,
    ...entries,
  ],
  {
    stdio: 'inherit',
    cwd: root,
    env: { ...process.env, TEST_RUN_ID: runId },
    detached: true,
  },
);
let timedOut = false;
const limit = setTimeout(() => {
  timedOut = true;
  console.error(`\nThe test run outlived ${limitMs / 60_000} minutes: a test process is stuck (open handles after a failure?). Ending it.`);
  process.kill(-child.pid, 'SIGKILL');
}, limitMs);
const result = { status: await new Promise((resolve) => child.on('exit', (code) => resolve(timedOut ? 1 : code))) };
clearTimeout(limit);
const { byFile, cases } = readReport(report);
rmSync(folder, { recursive: true, force: true });
const counted = Object.entries(cases).map(([dialect, { pass, fail }]) => `${pass + fail} ${dialect === 'any' ? 'without a database' : `on ${dialect}`}${fail ? ` (${fail} failed)` : ''}`);
console.log(`\nTest cases on Node ${process.version}: ${counted.join(', ') || 'none'}`);
const slowest = Object.entries(byFile)
  .map(([file, measured]) => [file, Object.values(measured).reduce((a, b) => a + b, 0)])
  .sort((a, b) => b[1] - a[1])
  .slice(0, 5);
console.log(`Slowest files: ${slowest.map(([file, ms]) => `${file} ${(ms / 1000).toFixed(1)} s`).join(', ')}`);
if (recording && result.status === 0) {
  const rounded = Object.fromEntries(
    Object.keys(byFile)
      .sort()
      .map((file) => [file, Object.fromEntries(Object.entries(byFile[file]).map(([dialect, ms]) => [dialect, Math.round(ms / 100) * 100]))]),
  );
  writeFileSync(durationsFile, `${JSON.stringify(rounded, null, 2)}\n`);
  console.log(`Wrote ${relative(root, durationsFile)}: ${Object.keys(rounded).length} files.`);
}
if (!process.env.TEST_POSTGRES_URL && wanted.includes('postgres')) {
  console.log('\nNote: PostgreSQL tests were SKIPPED (TEST_POSTGRES_URL not set); only SQLite was tested.');
}
await dropTestSchemas(true);
process.exit(result.status ?? 1);
