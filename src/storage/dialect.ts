import { PostgresAdapter, sql, type Kysely, type QueryExecutorProvider, type RawBuilder } from 'kysely';

/** SQLite's `synchronous` level for every commit that must survive power loss (lightTransaction restores it). */
export const SQLITE_DURABLE_SYNCHRONOUS = 'FULL';

/** The type of a column of `records`: what PostgreSQL casts the JSON value to (SQLite keeps JSON's own types). */
export type RecordColumnType = 'text' | 'int' | 'bigint';

/**
 * Everything that differs between SQLite and PostgreSQL, in one object per database; the rest of
 * the code writes each statement once and asks this object for the parts that differ. `Storage`
 * carries it (opened with the database), and `dialectOf` finds it from any database handle or
 * transaction, so a repository needs no second argument.
 *
 * What differs, and why it is all there is:
 * - **Batches as one parameter.** A batch of rows travels as one JSON array of objects, so a
 *   statement's SQL text is the same whatever the batch size (prepared once, planned once);
 *   `records` turns it into a relation with named columns. A list of ids is a `text[]` on
 *   PostgreSQL (`= any` is planned with the actual array: primary-key lookups) and JSON on SQLite.
 * - **Concurrency.** PostgreSQL has many writers and row locks (`FOR UPDATE`, `SKIP LOCKED`,
 *   advisory locks, NOTIFY); SQLite has one writer at a time, so the same guarantees need nothing,
 *   except taking the write lock first where a transaction reads what it is about to change.
 * - **Bookkeeping commits** (`lightTransaction`): what durability each one needs costs differently.
 * - **A few types and index hints** for migrations and the claim, and whether the delivery log is
 *   partitioned (retention drops whole periods of it) or not (retention deletes rows).
 */
export interface StorageDialect {
  readonly name: 'sqlite' | 'postgres';
  /** Whether several transactions can write at once (PostgreSQL), or one at a time (SQLite). */
  readonly concurrentWriters: boolean;
  /** Transactional jobs per batch by default (job-worker.ts, `batchSize`, says why they differ). */
  readonly jobBatchSize: number;
  /** Column type of epoch-millisecond timestamps (SQLite's integer is already 64-bit). */
  readonly epochMs: 'bigint' | 'integer';
  /** Column type and whether to mark it autoincrement, for a growing integer primary key. */
  readonly serialKey: { type: 'bigserial' | 'integer'; autoIncrement: boolean };
  /**
   * Whether the delivery log (`notifications`, `notification_attempts`) is partitioned by period
   * of creation, and retention drops whole periods (PostgreSQL, log-partitions.ts); SQLite deletes rows.
   */
  readonly partitionedLog: boolean;
  /** Whether `alter table … drop column` drops a column with a UNIQUE constraint (PostgreSQL); SQLite refuses, and a migration rebuilds the table. */
  readonly dropsUniqueColumns: boolean;

  /**
   * The parameter value of a list of strings, for `inList`. PostgreSQL plans `= any($1::text[])`
   * with the actual array (primary-key lookups); `in (select jsonb_array_elements_text($1))` is
   * estimated at 100 rows whatever the list, and was planned as a hash semi-join over a whole
   * table, or a nested loop reading the list again per row (test/storage/query-plans.test.ts).
   */
  list(values: readonly string[]): string | string[];
  /** `expression` is one of `list` (a parameter made by `list`). */
  inList(expression: RawBuilder<unknown>, list: unknown): RawBuilder<boolean>;
  /**
   * A JSON array of objects (one parameter: `JSON.stringify(rows)`) as a relation named `alias`
   * with these columns, for `from`, `join` and `insert … select`. Keys missing from an object are null.
   */
  records(json: unknown, alias: string, columns: Readonly<Record<string, RecordColumnType>>): RawBuilder<unknown>;
  /** A text column holding JSON: the value of its top-level `key`, as text. */
  jsonField(column: RawBuilder<unknown>, key: string): RawBuilder<string | null>;
  /** `column` compared in byte order (the order JavaScript's Buffer.compare sorts in). */
  byteOrder(column: string): RawBuilder<unknown>;
  /** The table, telling the planner which index to use where it would pick a worse one (SQLite). */
  tableUsingIndex(table: string, index: string): RawBuilder<unknown>;

  /** Locks the rows a select reads until the transaction ends, where another writer could change them meanwhile. */
  lockRows<Q extends { forUpdate(): Q }>(query: Q): Q;
  /**
   * The same as a suffix of raw SQL: `for update` on PostgreSQL, of the table `of` only in a join;
   * `skipLocked`: rows another transaction holds are left out instead of waited for.
   */
  rowLock(options?: { of?: string; skipLocked?: boolean }): RawBuilder<unknown>;
  /** Inside a transaction: from now until it ends, no other writer changes what it reads. */
  holdWriteLock(tx: QueryExecutorProvider): Promise<void>;
  /** Inside a transaction: waits until no other transaction holds `key`, then holds it until this one ends. */
  serialize(tx: QueryExecutorProvider, key: string): Promise<void>;
  /** Inside a transaction: tells other processes' LISTEN on `channel`, if it commits. */
  notify(tx: QueryExecutorProvider, channel: string, payload: string): Promise<void>;

  /** See `lightTransaction` (light-transaction.ts). */
  lightTransaction<DB, T>(db: Kysely<DB>, fn: (tx: Kysely<DB>) => Promise<T>, options: { singleStatement?: boolean }): Promise<T>;
  /** The schema the connection works in; undefined where there are none (SQLite). */
  currentSchema(db: QueryExecutorProvider): Promise<string | undefined>;
  /**
   * Leaves `100 - percent` % of each page of `table` free for updates of its rows (PostgreSQL's
   * fillfactor: an update that fits on its row's page and changes no indexed column is HOT, no
   * index entry written); SQLite has no such setting.
   */
  setFillFactor(db: QueryExecutorProvider, table: string, percent: number): Promise<void>;
}

const columnList = (columns: Readonly<Record<string, RecordColumnType>>) => Object.keys(columns);

export const postgresDialect: StorageDialect = {
  name: 'postgres',
  concurrentWriters: true,
  jobBatchSize: 512,
  epochMs: 'bigint',
  serialKey: { type: 'bigserial', autoIncrement: false },
  partitionedLog: true,
  dropsUniqueColumns: true,
  list: (values) => [...values],
  inList: (expression, list) => sql<boolean>`${expression} = any(${list}::text[])`,
  records: (json, alias, columns) =>
    sql`jsonb_to_recordset(${json}::jsonb) as ${sql.raw(alias)}(${sql.raw(
      Object.entries(columns)
        .map(([name, type]) => `${name} ${type}`)
        .join(', '),
    )})`,
  jsonField: (column, key) => sql<string | null>`(${column}::jsonb ->> ${sql.lit(key)})`,
  byteOrder: (column) => sql`${sql.ref(column)} collate "C"`,
  tableUsingIndex: (table) => sql.table(table),
  lockRows: (query) => query.forUpdate(),
  rowLock: (options = {}) => sql.raw(` for update${options.of ? ` of ${options.of}` : ''}${options.skipLocked ? ' skip locked' : ''}`),
  holdWriteLock: async () => {},
  serialize: async (tx, key) => {
    await sql`select pg_advisory_xact_lock(hashtextextended(${key}, 0))`.execute(tx);
  },
  notify: async (tx, channel, payload) => {
    await sql`select pg_notify(${channel}, ${payload})`.execute(tx);
  },
  // An ordinary transaction: its WAL flush does not block the event loop and the server groups
  // concurrent flushes; what costs is round trips, so single-statement work runs in autocommit.
  lightTransaction: (db, fn, options) => (options.singleStatement ? fn(db) : db.transaction().execute(fn)),
  currentSchema: async (db) => (await sql<{ schema: string }>`select current_schema() as schema`.execute(db)).rows[0]?.schema,
  setFillFactor: async (db, table, percent) => {
    await sql`alter table ${sql.table(table)} set (fillfactor = ${sql.lit(percent)})`.execute(db);
  },
};

export const sqliteDialect: StorageDialect = {
  name: 'sqlite',
  concurrentWriters: false,
  jobBatchSize: 256,
  epochMs: 'integer',
  serialKey: { type: 'integer', autoIncrement: true },
  partitionedLog: false,
  dropsUniqueColumns: false,
  list: (values) => JSON.stringify(values),
  inList: (expression, list) => sql<boolean>`${expression} in (select value from json_each(${list}))`,
  records: (json, alias, columns) =>
    sql`(select ${sql.raw(
      columnList(columns)
        .map((name) => `value ->> '${name}' as ${name}`)
        .join(', '),
    )} from json_each(${json})) as ${sql.raw(alias)}`,
  jsonField: (column, key) => sql<string | null>`(${column} ->> ${sql.lit(key)})`,
  // SQLite's default collation (BINARY) is byte order already.
  byteOrder: (column) => sql.ref(column),
  tableUsingIndex: (table, index) => sql`${sql.table(table)} indexed by ${sql.raw(index)}`,
  // One writer at a time: a transaction that has written holds every row it reads until it ends.
  lockRows: (query) => query,
  rowLock: () => sql``,
  // A no-op write makes the transaction the writer (waiting for the lock like any write) before it reads.
  holdWriteLock: async (tx) => {
    await sql`update jobs set state = state where 0`.execute(tx);
  },
  serialize: async () => {},
  // One process: JobSignals wakes its loops.
  notify: async () => {},
  // `synchronous = NORMAL` for this transaction only, on the connection it holds (light-transaction.ts).
  lightTransaction: (db, fn) =>
    db.connection().execute(async (connection) => {
      await sql`pragma synchronous = NORMAL`.execute(connection);
      try {
        return await connection.transaction().execute(fn);
      } finally {
        await sql`pragma synchronous = ${sql.raw(SQLITE_DURABLE_SYNCHRONOUS)}`.execute(connection);
      }
    }),
  currentSchema: async () => undefined,
  setFillFactor: async () => {},
};

/** The dialect of a database handle or transaction: the object `openStorage` put in `Storage.dialect`. */
export function dialectOf(db: QueryExecutorProvider): StorageDialect {
  return db.getExecutor().adapter instanceof PostgresAdapter ? postgresDialect : sqliteDialect;
}
