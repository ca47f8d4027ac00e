import pg from 'pg';
import { Kysely, SqliteDialect, type Transaction } from 'kysely';
import { postgresDialect, sqliteDialect, SQLITE_DURABLE_SYNCHRONOUS, type StorageDialect } from './dialect.js';
import { ServicePostgresDialect } from './postgres-dialect.js';
import { createBoundedPool, DEFAULT_CONNECTION_BOUNDS, type ConnectionBounds, type WatchdogEvent } from './postgres-pool.js';
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
  /**
   * Where reads that may lag a little go (the delivery log's lists, stats): the replica of
   * DATABASE_READ_URL, else `db` itself. Use through `services/replica-reads.ts`.
   */
  readDb: Db;
  /** What differs between the databases (dialect.ts). */
  dialect: StorageDialect;
  /** SQLite: the database file (readiness checks the room left on its file system); undefined otherwise. */
  file?: string | undefined;
  /** PostgreSQL pool the workers LISTEN on (the queries' pool, or DATABASE_LISTEN_URL's); undefined on SQLite or with LISTEN off. */
  pool: pg.Pool | undefined;
  /**
   * Runs `work` with no statement bound on the primary's connections (migrations: an index build
   * may take minutes). Only for work that runs alone, before the process serves.
   */
  withoutStatementBound<T>(work: () => Promise<T>): Promise<T>;
  /** PostgreSQL: whether the primary answered its last heartbeat (always true on SQLite or without a heartbeat). */
  answering(): boolean;
  /** The same of the replica of `readDb` (true without one): a silent replica is not waited for. */
  replicaAnswering(): boolean;
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
  /**
   * The bounds on every wait for the database (postgres-pool.ts; default DEFAULT_CONNECTION_BOUNDS
   * without the heartbeat, which only a serving process needs). SQLite takes `poolTimeoutMs` as its
   * busy timeout: how long a write waits for the lock.
   */
  bounds?: Partial<ConnectionBounds>;
  /** What the PostgreSQL watchdogs did (the log and the metrics). */
  onWatchdogEvent?: (event: WatchdogEvent & { pool: 'primary' | 'listen' | 'read' }) => void;
  /** PostgreSQL: a replica for the reads that may lag (DATABASE_READ_URL); undefined: they go to `databaseUrl`. */
  readUrl?: string;
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
    sqlite.pragma(`busy_timeout = ${options.bounds?.poolTimeoutMs ?? DEFAULT_CONNECTION_BOUNDS.poolTimeoutMs}`);
    if (path !== ':memory:') restrictSqliteCompanions(path, options.log);
    const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: withStatementCache(sqlite) }) });
    return {
      db,
      readDb: db,
      dialect: sqliteDialect,
      file: path === ':memory:' ? undefined : path,
      pool: undefined,
      withoutStatementBound: (work) => work(),
      answering: () => true,
      replicaAnswering: () => true,
      close: () => db.destroy(),
    };
  }
  const bounded = (url: string, max: number, pool: 'primary' | 'listen' | 'read', prepared: boolean) =>
    createBoundedPool(url, {
      max,
      schema: options.schema,
      bounds: { heartbeatTimeoutMs: 0, ...options.bounds },
      ...(prepared ? { onConnect: usePreparedStatements } : {}),
      onEvent: (event) => options.onWatchdogEvent?.({ ...event, pool }),
    });
  const prepared = options.preparedStatements !== false;
  const primary = bounded(databaseUrl, options.poolSize ?? 10, 'primary', prepared);
  const db = new Kysely<Database>({ dialect: new ServicePostgresDialect({ pool: primary.pool }) });
  const listen = options.listenUrl === undefined || options.listenUrl === 'off' ? undefined : bounded(options.listenUrl, 1, 'listen', false);
  const read = options.readUrl ? bounded(options.readUrl, options.poolSize ?? 10, 'read', prepared) : undefined;
  const readDb = read ? new Kysely<Database>({ dialect: new ServicePostgresDialect({ pool: read.pool }) }) : db;
  return {
    db,
    readDb,
    dialect: postgresDialect,
    pool: options.listenUrl === 'off' ? undefined : (listen?.pool ?? primary.pool),
    withoutStatementBound: (work) => (primary.watchdog ? primary.watchdog.withoutStatementBound(work) : work()),
    answering: () => primary.watchdog?.answering ?? true,
    replicaAnswering: () => read?.watchdog?.answering ?? true,
    // Kysely's destroy ends the pools it was given; their watchdogs are stopped first.
    close: async () => {
      primary.watchdog?.stop();
      read?.watchdog?.stop();
      await db.destroy();
      if (readDb !== db) await readDb.destroy();
      await listen?.end();
    },
  };
}
