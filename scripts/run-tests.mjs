#!/usr/bin/env node
// Runs every test/**/*.test.ts with Node's test runner through tsx (Node 20's runner does not
// expand `**` itself). SQLite always; PostgreSQL too when TEST_POSTGRES_URL is set.
//
// The files run in TEST_CONCURRENCY (default 4) processes, each importing its share of the files
// one after another: loading the service's modules once per process instead of once per file is
// most of what a small test file costs. A test file therefore leaves no
// global state behind (process.env, process listeners). TEST_ISOLATION=file runs each file in a
// process of its own, as `node --test` does.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const root = new URL('..', import.meta.url).pathname;
const filter = process.argv.slice(2);
const files = readdirSync(join(root, 'test'), { recursive: true })
  .map(String)
  .filter((file) => file.endsWith('.test.ts'))
  .filter((file) => filter.length === 0 || filter.some((f) => file.includes(f)))
  .sort()
  .map((file) => join('test', file));

const wanted = (process.env.TEST_DATABASES ?? 'sqlite,postgres').split(',');
const dialects = ['sqlite', ...(process.env.TEST_POSTGRES_URL ? ['postgres'] : [])].filter((d) => wanted.includes(d));
console.log(`Test databases: ${dialects.join(', ') || 'none (unit tests only)'}`);
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

/** Round-robin shares of the files, each imported in turn by one entry file (in a temporary folder). */
function bundle(list, count) {
  const folder = mkdtempSync(join(tmpdir(), 'rewards-test-bundles-'));
  const shares = Array.from({ length: Math.min(count, list.length) }, () => []);
  list.forEach((file, i) => shares[i % shares.length].push(file));
  const entries = shares.map((share, i) => {
    const entry = join(folder, `bundle-${i + 1}.test.mjs`);
    writeFileSync(entry, share.map((file) => `await import(${JSON.stringify(pathToFileURL(join(root, file)).href)});\n`).join(''));
    return entry;
  });
  return { entries, cleanup: () => rmSync(folder, { recursive: true, force: true }) };
}

const concurrency = Number(process.env.TEST_CONCURRENCY ?? 4);
const perFile = process.env.TEST_ISOLATION === 'file' || files.length <= 1;
const bundles = perFile ? { entries: files, cleanup: () => {} } : bundle(files, concurrency);

await dropTestSchemas(false);
// A test that fails before it stops what it started (a worker, a server) can leave handles open,
// and its process then never ends (--test-force-exit is no cure: with the files of a bundle
// imported one after the other, it ends the bundle after its first file). So no test may run
// longer than five minutes, and a whole run that outlives TEST_RUN_LIMIT_MINUTES (default 30) is
// ended, its processes with it, and fails with a message saying so.
const limitMs = Number(process.env.TEST_RUN_LIMIT_MINUTES ?? 30) * 60_000;
const child = spawn(process.execPath, ['--import', 'tsx', '--test', '--test-timeout=300000', '--test-reporter=spec', `--test-concurrency=${concurrency}`, ...bundles.entries], {
  stdio: 'inherit',
  cwd: root,
  env: { ...process.env, TEST_RUN_ID: runId },
  detached: true,
});
let timedOut = false;
const limit = setTimeout(() => {
  timedOut = true;
  console.error(`\nThe test run outlived ${limitMs / 60_000} minutes: a test process is stuck (open handles after a failure?). Ending it.`);
  process.kill(-child.pid, 'SIGKILL');
}, limitMs);
const result = { status: await new Promise((resolve) => child.on('exit', (code) => resolve(timedOut ? 1 : code))) };
clearTimeout(limit);
bundles.cleanup();
if (!process.env.TEST_POSTGRES_URL && wanted.includes('postgres')) {
  console.log('\nNote: PostgreSQL tests were SKIPPED (TEST_POSTGRES_URL not set); only SQLite was tested.');
}
await dropTestSchemas(true);
process.exit(result.status ?? 1);
