import { Migrator, sql, type Kysely, type Migration, type MigrationProvider } from 'kysely';
import { dialectOf } from '../dialect.js';
import * as m001 from './001_accounts_clients_keys.js';
import * as m002 from './002_subscriptions.js';
import * as m003 from './003_experiences.js';
import * as m004 from './004_requests_jobs.js';
import * as m005 from './005_notifications.js';
import * as m006 from './006_jobs_kind_index.js';
import * as m007 from './007_notifications_schedule_in_jobs.js';
import * as m008 from './008_notifications_test_flag.js';
import * as m009 from './009_delivery_operations.js';
import * as m010 from './010_console_links.js';
import * as m011 from './011_notification_order.js';
import * as m012 from './012_notification_waiters.js';
import * as m013 from './013_delivery_fairness.js';
import * as m014 from './014_token_revocations.js';
import * as m015 from './015_readiness_probe.js';
import * as m016 from './016_deliveries_in_notification_rows.js';
import * as m017 from './017_partitioned_delivery_log.js';
import * as m018 from './018_delivery_log_fillfactor.js';
import * as m019 from './019_attempt_request_headers.js';
import * as m020 from './020_manual_retry.js';
import * as m021 from './021_account_failed_notifications.js';
import * as m022 from './022_attempt_retry_after.js';
import * as m023 from './023_listen_sessions.js';
import * as m024 from './024_jobs_without_deliveries.js';
import * as m025 from './025_endpoint_circuits.js';
import * as m026 from './026_notification_trace_parent.js';

/**
 * Every migration, registered explicitly and in order. A new migration is a new file here,
 * never an edit of a released one, and it must be safe while the previous release's processes
 * run on the same database (docs/deployment.md, "Upgrades without downtime"): expand now,
 * contract in a later release; an index on the delivery log made `ON ONLY` and finished
 * concurrently (partitioned-indexes.ts).
 */
const MIGRATIONS: Record<string, Migration> = {
  '001_accounts_clients_keys': m001,
  '002_subscriptions': m002,
  '003_experiences': m003,
  '004_requests_jobs': m004,
  '005_notifications': m005,
  '006_jobs_kind_index': m006,
  '007_notifications_schedule_in_jobs': m007,
  '008_notifications_test_flag': m008,
  '009_delivery_operations': m009,
  '010_console_links': m010,
  '011_notification_order': m011,
  '012_notification_waiters': m012,
  '013_delivery_fairness': m013,
  '014_token_revocations': m014,
  '015_readiness_probe': m015,
  '016_deliveries_in_notification_rows': m016,
  '017_partitioned_delivery_log': m017,
  '018_delivery_log_fillfactor': m018,
  '019_attempt_request_headers': m019,
  '020_manual_retry': m020,
  '021_account_failed_notifications': m021,
  '022_attempt_retry_after': m022,
  '023_listen_sessions': m023,
  '024_jobs_without_deliveries': m024,
  '025_endpoint_circuits': m025,
  '026_notification_trace_parent': m026,
};

const provider: MigrationProvider = { getMigrations: async () => MIGRATIONS };

export interface MigrationReport {
  applied: string[];
}

/**
 * Brings the schema up to date. Safe to run concurrently from several processes (Kysely locks).
 * Refuses a database a newer release migrated (DatabaseAheadError). The delivery log's indexes
 * are finished after it, concurrently (finishPartitionedIndexes).
 */
export async function migrateToLatest<DB>(db: Kysely<DB>): Promise<MigrationReport> {
  return migrate(db, (migrator) => migrator.migrateToLatest());
}

/** Brings the schema to `name` exactly (tests of upgrades in place start from an older schema). */
export async function migrateTo<DB>(db: Kysely<DB>, name: string): Promise<MigrationReport> {
  return migrate(db, (migrator) => migrator.migrateTo(name));
}

/**
 * The database was migrated by a newer release: it has migrations this release does not know. A
 * process of this release refuses to start on it (docs/deployment.md, "Upgrades without downtime"):
 * the newer release's processes serve it, and this one would not know what its rows mean.
 */
export class DatabaseAheadError extends Error {
  constructor(readonly unknown: readonly string[]) {
    super(
      `the database is further ahead than this release: it has migration ${unknown.join(', ')}, which this release does not know. ` +
        'A newer release migrated it: run that release (in a rolling upgrade, stop this one). To go back to this release, run the newer ' +
        'release\'s down migrations first (docs/deployment.md, "Upgrades without downtime").',
    );
    this.name = 'DatabaseAheadError';
  }
}

/** The migrations the database has that this release does not know, in order; none on a new database. */
async function migrationsAhead(db: Kysely<unknown>, schema: string | undefined): Promise<string[]> {
  const table = schema ? sql.id(schema, 'kysely_migration') : sql.id('kysely_migration');
  const exists = schema
    ? await sql<{ found: string | null }>`select to_regclass(${`${schema}.kysely_migration`}) as found`.execute(db)
    : await sql<{ found: string | null }>`select name as found from sqlite_master where type = 'table' and name = 'kysely_migration'`.execute(db);
  if (!exists.rows[0]?.found) return [];
  const { rows } = await sql<{ name: string }>`select name from ${table} order by name`.execute(db);
  return rows.map((row) => row.name).filter((name) => !Object.hasOwn(MIGRATIONS, name));
}

async function migrate<DB>(db: Kysely<DB>, run: (migrator: Migrator) => ReturnType<Migrator['migrateToLatest']>): Promise<MigrationReport> {
  // Kysely looks for its bookkeeping tables in every schema unless told which one: on a shared
  // PostgreSQL database another schema's tables would make it skip creating this schema's.
  const migrationTableSchema = await dialectOf(db).currentSchema(db);
  const ahead = await migrationsAhead(db as unknown as Kysely<unknown>, migrationTableSchema);
  if (ahead.length > 0) throw new DatabaseAheadError(ahead);
  const migrator = new Migrator({ db, provider, ...(migrationTableSchema ? { migrationTableSchema } : {}) });
  const { error, results } = await run(migrator);
  // eslint-disable-next-line @typescript-eslint/no-base-to-string -- a migration may throw anything; its own text is the message.
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return { applied: (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName) };
}

export { finishPartitionedIndexes } from './partitioned-indexes.js';
