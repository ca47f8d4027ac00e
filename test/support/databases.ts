import { randomBytes } from 'node:crypto';
import pg from 'pg';

/**
 * The databases a test file runs against. SQLite always; PostgreSQL when TEST_POSTGRES_URL is set
 * (`.ci/run` sets it). TEST_DATABASES=sqlite|postgres narrows the list.
 */
export type TestDialect = 'sqlite' | 'postgres';

export function testDialects(): TestDialect[] {
  const wanted = (process.env.TEST_DATABASES ?? 'sqlite,postgres').split(',').map((s) => s.trim());
  const dialects: TestDialect[] = [];
  if (wanted.includes('sqlite')) dialects.push('sqlite');
  if (wanted.includes('postgres') && process.env.TEST_POSTGRES_URL) dialects.push('postgres');
  return dialects;
}

export function postgresUrl(): string {
  const url = process.env.TEST_POSTGRES_URL;
  if (!url) throw new Error('TEST_POSTGRES_URL is not set');
  return url;
}

/** A fresh PostgreSQL schema, so concurrent test files never see each other's rows. */
export async function createPostgresSchema(): Promise<{ schema: string; drop: () => Promise<void> }> {
  // t_ + the test run's id (scripts/run-tests.mjs: its process id) + 6 random hex digits: a run
  // drops its own schemas, and only those of runs that are gone, never a concurrent run's.
  const run = (process.env.TEST_RUN_ID ?? '000000').slice(0, 6).padStart(6, '0');
  const schema = `t_${run}${randomBytes(3).toString('hex')}`;
  const client = new pg.Client({ connectionString: postgresUrl() });
  await client.connect();
  try {
    await client.query(`create schema ${schema}`);
  } finally {
    await client.end();
  }
  return {
    schema,
    // Dropping a schema while another test file migrates makes Kysely's introspector (which lists
    // every schema's tables) fail with "schema … does not exist". Test files run concurrently, so
    // schemas are dropped by scripts/run-tests.mjs once the whole run is over.
    async drop() {},
  };
}

/** DATABASE_URL for a child process: PostgreSQL URLs carry the schema in `options`. */
export function postgresUrlWithSchema(schema: string): string {
  const url = new URL(postgresUrl());
  url.searchParams.set('options', `-c search_path=${schema}`);
  return url.toString();
}
