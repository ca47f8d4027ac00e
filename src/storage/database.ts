import pg from 'pg';
import { Kysely, SqliteDialect, type Transaction } from 'kysely';
import { postgresDialect, sqliteDialect, SQLITE_DURABLE_SYNCHRONOUS, type StorageDialect } from './dialect.js';
import { ServicePostgresDialect } from './postgres-dialect.js';
import { usePreparedStatements } from './prepared-statements.js';
import { openSqliteDatabase, type SqliteDatabase } from './sqlite-driver.js';
import type { Database } from './tables/index.js';
import { prepareSqliteFiles, restrictSqliteCompanions, type FileModeLog } from './private-files.js';

export type Db = Kysely<Database>;
export type Tx = Transaction<Database>;
/** Repositories take either the database or an open transaction as their first argument. */
export type Executor = Db | Tx;

export interface Storage {
  db: Db;
  /** What differs between the databases (dialect.ts). */
  dialect: StorageDialect;
  /** SQLite: the database file (readiness checks the room left on its file system); undefined otherwise. */
  file?: string | undefined;
  /** PostgreSQL pool the workers LISTEN on (the queries' pool, or DATABASE_LISTEN_URL's); undefined on SQLite or with LISTEN off. */
  pool: pg.Pool | undefined;
  close(): Promise<void>;
}

// int8 (bigint) holds epoch milliseconds, well inside Number's exact range.
pg.types.setTypeParser(20, (value) => Number(value));

/** Stands for a statement with nothing to do (see the rollback in withStatementCache). */
const NO_OP_STATEMENT = { reader: false, run: () => ({ changes: 0, lastInsertRowid: 0 }), all: () => [], iterate: () => [][Symbol.iterator]() };

/**
 * Kysely asks the SQLite driver to prepare every query anew; the same few dozen SQL texts repeat
 * forever, and preparing was a visible share of the worker's CPU while delivering notifications. Prepared
 * statements are reusable (Kysely never iterates two at once on one connection), so keep them.
 */
function withStatementCache(sqlite: SqliteDatabase): SqliteDatabase {
  const cache = new Map<string, ReturnType<SqliteDatabase['prepare']>>();
  const prepare = sqlite.prepare.bind(sqlite);
  return new Proxy(sqlite, {
    get(target, property, receiver) {
      if (property !== 'prepare') {
        const value: unknown = Reflect.get(target, property, receiver);
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      }
      return (source: string) => {
        // SQLite ends a transaction by itself on some errors (disk full, I/O error); Kysely's
        // ROLLBACK then failed with "no transaction is active" and hid the error that mattered.
        if (source === 'rollback' && !target.inTransaction) return NO_OP_STATEMENT;
        let statement = cache.get(source);
        if (!statement) {
          statement = prepare(source);
          if (cache.size >= 500) cache.delete(cache.keys().next().value!);
          cache.set(source, statement);
        }
        return statement;
      };
    },
  });
}

export interface StorageOptions {
  /** PostgreSQL schema to use (tests isolate themselves with one schema each). */
  schema?: string;
  poolSize?: number;
  /**
   * PostgreSQL: where the workers LISTEN for wake-ups (DATABASE_LISTEN_URL). Undefined: on the
   * queries' pool. A URL: one direct session of its own (behind a pooler in transaction mode,
   * LISTEN needs a session that stays the same server connection). 'off': no LISTEN, workers poll.
   */
  listenUrl?: string;
  /** Where a SQLite file or directory found open to other users is reported (private-files.ts). */
  log?: FileModeLog;
  /** PostgreSQL: the hot statements as named prepared statements (default true; prepared-statements.ts). */
  preparedStatements?: boolean;
}

export function openStorage(databaseUrl: string, options: StorageOptions = {}): Storage {
  if (databaseUrl.startsWith('sqlite:')) {
    const path = databaseUrl.slice('sqlite:'.length);
    // Readable by the service's user only: 0700 directory, 0600 files (docs/deployment.md, "File modes").
    if (path !== ':memory:') prepareSqliteFiles(path, options.log);
    const sqlite = openSqliteDatabase(path);
    // WAL lets readers run beside the writer. FULL fsyncs the WAL on every commit, so a request
    // answered 202 survives power loss too, not only a process crash; ingest groups many
    // requests into one commit to pay for that fsync once per batch.
    sqlite.pragma('journal_mode = WAL');
    sqlite.pragma(`synchronous = ${SQLITE_DURABLE_SYNCHRONOUS}`);
    sqlite.pragma('foreign_keys = ON');
    sqlite.pragma('busy_timeout = 5000');
    if (path !== ':memory:') restrictSqliteCompanions(path, options.log);
    const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: withStatementCache(sqlite) }) });
    return { db, dialect: sqliteDialect, file: path === ':memory:' ? undefined : path, pool: undefined, close: () => db.destroy() };
  }
  const pool = postgresPool(databaseUrl, options.poolSize ?? 10, options.schema);
  if (options.preparedStatements !== false) pool.on('connect', (client) => usePreparedStatements(client));
  const db = new Kysely<Database>({ dialect: new ServicePostgresDialect({ pool }) });
  if (options.listenUrl === 'off') return { db, dialect: postgresDialect, pool: undefined, close: () => db.destroy() };
  if (!options.listenUrl) return { db, dialect: postgresDialect, pool, close: () => db.destroy() };
  const listenPool = postgresPool(options.listenUrl, 1, options.schema);
  return {
    db,
    dialect: postgresDialect,
    pool: listenPool,
    close: async () => {
      await db.destroy();
      await listenPool.end();
    },
  };
}

/**
 * A pg pool that survives dropped connections. A connection PostgreSQL drops (a restart,
 * pg_terminate_backend) makes its client emit 'error'. The pool listens only to idle clients; a
 * client in use (a transaction between two statements, the LISTEN connection) would have no
 * listener, and an unhandled 'error' ends the process. The statement in flight is rejected anyway,
 * so the work that used the client fails and is retried; the pool drops the dead client at its
 * release.
 */
function postgresPool(connectionString: string, max: number, schema: string | undefined): pg.Pool {
  const pool = new pg.Pool({ connectionString, max, ...(schema ? { options: `-c search_path=${schema}` } : {}) });
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}
