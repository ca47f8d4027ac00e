import { PostgresAdapter, sql, type QueryExecutorProvider } from 'kysely';

/** Kysely's own lock key: a process of an older release (session lock) and this one still exclude each other. */
const MIGRATION_LOCK_ID = '3853314791062309107';
const MIGRATION_LOCK_TIMEOUT_MS = 60 * 60 * 1000;

/**
 * The migration lock, held by a transaction instead of a session, so that it works behind a
 * connection pooler in transaction mode (PgBouncer).
 *
 * Kysely takes a session-level `pg_advisory_lock` on its connection, runs the migrations in a
 * transaction, then unlocks. Through PgBouncer in transaction mode each of those three is its own
 * transaction and may run on a different server connection: the unlock then misses (it releases
 * nothing), the lock stays with a server connection that other clients go on using, and every
 * later migrator — each process migrates at start — waits on it until that server connection is
 * closed (`server_idle_timeout`, 10 minutes by default; never while it stays busy) or Kysely's
 * one-hour lock_timeout fails the start. Four processes starting at once hung that way every time.
 *
 * Here the lock opens the transaction itself (BEGIN, then a transaction-level lock); Kysely's
 * migration transaction, on the same connection, runs inside it (its BEGIN is a no-op with a
 * warning) and its COMMIT or ROLLBACK ends it and releases the lock, on one server connection. The
 * release rolls back whatever is still open: nothing after that commit, the transaction of a lock
 * that failed to be taken otherwise.
 */
export class TransactionScopedMigrationLock extends PostgresAdapter {
  override async acquireMigrationLock(db: QueryExecutorProvider): Promise<void> {
    await sql`begin`.execute(db);
    await sql`select set_config('lock_timeout', ${String(MIGRATION_LOCK_TIMEOUT_MS)}, true), pg_advisory_xact_lock(${sql.raw(MIGRATION_LOCK_ID)})`.execute(db);
  }

  override async releaseMigrationLock(db: QueryExecutorProvider): Promise<void> {
    await sql`rollback`.execute(db);
  }
}
