import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, type Config } from '../../src/config.js';
import { createDeps, type Deps } from '../../src/deps.js';
import { createAccount, createClient } from '../../src/services/accounts.js';
import { SCOPES } from '../../src/domain/tokens/scopes.js';
import { createPostgresSchema, postgresUrl, postgresUrlWithSchema, type TestDialect } from './databases.js';

// Storage and worker tests start here: the service's dependencies without the HTTP app, whose
// routes, schemas and documentation cost each test file a noticeable part of its start.

export interface ClientCredentials {
  accountId: string;
  clientId: string;
  clientSecret: string;
}

/** The service's dependencies on a fresh database, without the HTTP app: for storage and worker tests. */
export interface TestDatabase {
  dialect: TestDialect;
  deps: Deps;
  config: Config;
  dataDir: string;
  /** DATABASE_URL for another process or a CLI run on the same database (PostgreSQL: with its schema). */
  databaseUrl: string;
  /** A new account with one client holding `scopes` (default: every scope but admin). */
  createClientAccount(name?: string, scopes?: string[]): Promise<ClientCredentials>;
  close(): Promise<void>;
}

/**
 * createDeps against a fresh database (a temporary SQLite file, or a new PostgreSQL schema) with
 * the test settings; no routes, no listening socket, no operator.
 */
export interface TestDatabaseOptions {
  /** The service's clock (default Date.now): a test moves it past a hold instead of waiting. */
  clock?: () => number;
}

export async function startTestDatabase(dialect: TestDialect, env: Record<string, string> = {}, options: TestDatabaseOptions = {}): Promise<TestDatabase> {
  const dataDir = mkdtempSync(join(tmpdir(), 'rewards-test-'));
  const pgSchema = dialect === 'postgres' ? await createPostgresSchema() : undefined;
  const config = loadConfig({
    DATA_DIR: dataDir,
    DATABASE_URL: dialect === 'postgres' ? postgresUrl() : `sqlite:${join(dataDir, 'rewards.db')}`,
    SECRET_KEY: randomBytes(32).toString('base64'),
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    PORT: '0',
    PUBLIC_URL: 'http://127.0.0.1:8080',
    CALLBACK_ALLOW_PRIVATE_NETWORKS: 'true',
    // Off unless a test turns it on (test/notifications/circuit-breaker.test.ts): the tests of
    // retries, auto-disable and recovery fail their receivers on purpose, attempt after attempt.
    CIRCUIT_BREAKER_FAILURES: '0',
    ...env,
  });
  const deps = await createDeps(config, { schema: pgSchema?.schema, tracing: true, ...(options.clock ? { clock: options.clock } : {}) });
  let counter = 0;
  return {
    dialect,
    deps,
    config,
    dataDir,
    databaseUrl: pgSchema ? postgresUrlWithSchema(pgSchema.schema) : config.databaseUrl,
    async createClientAccount(name, scopes) {
      counter += 1;
      const account = await createAccount(deps.db, name ?? `account-${counter}-${randomBytes(3).toString('hex')}`);
      const issued = await createClient(deps.db, account.id, scopes ?? SCOPES.filter((s) => s !== 'admin'));
      return { accountId: account.id, clientId: issued.client.clientId, clientSecret: issued.clientSecret };
    },
    async close() {
      await deps.close();
      await pgSchema?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
