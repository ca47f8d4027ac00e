#!/usr/bin/env node
// Runs every test/**/*.test.ts with Node's test runner through tsx (Node 20's runner does not
// expand `**` itself). SQLite always; PostgreSQL too when TEST_POSTGRES_URL is set.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

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
if (!process.env.TEST_POSTGRES_URL && wanted.includes('postgres')) {
  console.log('PostgreSQL tests SKIPPED: set TEST_POSTGRES_URL=postgres://user:pass@127.0.0.1:5432/db to run them (.ci/run does).');
}

/** Drops the per-test schemas (t_ + 12 hex) left by earlier or finished runs. */
async function dropTestSchemas() {
  if (!process.env.TEST_POSTGRES_URL || !dialects.includes('postgres')) return;
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: process.env.TEST_POSTGRES_URL });
  await client.connect();
  try {
    const { rows } = await client.query("select nspname from pg_namespace where nspname ~ '^t_[0-9a-f]{12}$'");
    for (const { nspname } of rows) await client.query(`drop schema if exists ${nspname} cascade`);
  } finally {
    await client.end();
  }
}

await dropTestSchemas();
const result = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', '--test-reporter=spec', `--test-concurrency=${process.env.TEST_CONCURRENCY ?? 2}`, ...files],
  { stdio: 'inherit', cwd: root, env: process.env },
);
if (!process.env.TEST_POSTGRES_URL && wanted.includes('postgres')) {
  console.log('\nNote: PostgreSQL tests were SKIPPED (TEST_POSTGRES_URL not set); only SQLite was tested.');
}
await dropTestSchemas();
process.exit(result.status ?? 1);
