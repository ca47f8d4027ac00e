import { sql, type Kysely } from 'kysely';
import { epochMs } from './types.js';

/**
 * Delivery operations (docs/subscriptions.md): endpoint health, auto-disable, recovery and
 * per-subscription rate limits.
 *
 * - `subscriptions`: why and when the service switched a subscription off, and its rate limit.
 * - `subscription_stats`: attempts per subscription per five minutes (outcomes and a latency histogram),
 *   written in the transaction that logs the attempts, so `GET …/stats` sums at most 2,016 rows (7 days).
 * - `subscription_health`: per subscription, the last success and failure and the current run of
 *   failures (what auto-disable reads), written with the attempt log too.
 * - `subscription_rate_windows`: the current one-second window of a rate-limited subscription and
 *   the deliveries it has granted, shared by every worker process.
 * - Two partial indexes on `notifications`: the pending ones of a subscription, test sends aside
 *   (stats count them from the index alone; auto-disable), and the failed ones by completion time
 *   (recovery). They hold only the rows in those states.
 */
export const HISTOGRAM_COLUMNS = ['le_1', 'le_2', 'le_5', 'le_10', 'le_20', 'le_50', 'le_100', 'le_200', 'le_500', 'le_1000', 'le_2000', 'le_5000', 'le_10000', 'le_30000', 'le_inf'] as const;

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('subscriptions').addColumn('disabled_reason', 'text').execute();
  await db.schema.alterTable('subscriptions').addColumn('disabled_at', epochMs(db)).execute();
  await db.schema.alterTable('subscriptions').addColumn('rate_limit', 'integer').execute();

  let stats = db.schema
    .createTable('subscription_stats')
    .addColumn('subscription_id', 'text', (c) => c.notNull().references('subscriptions.id').onDelete('cascade'))
    .addColumn('bucket_start', epochMs(db), (c) => c.notNull())
    .addColumn('succeeded', 'integer', (c) => c.notNull().defaultTo(sql`0`))
    .addColumn('retry', 'integer', (c) => c.notNull().defaultTo(sql`0`))
    .addColumn('failed', 'integer', (c) => c.notNull().defaultTo(sql`0`));
  for (const column of HISTOGRAM_COLUMNS) stats = stats.addColumn(column, 'integer', (c) => c.notNull().defaultTo(sql`0`));
  await stats.addPrimaryKeyConstraint('subscription_stats_pk', ['subscription_id', 'bucket_start']).execute();

  await db.schema
    .createTable('subscription_health')
    .addColumn('subscription_id', 'text', (c) => c.primaryKey().references('subscriptions.id').onDelete('cascade'))
    .addColumn('last_success_at', epochMs(db))
    .addColumn('last_success_status', 'integer')
    .addColumn('last_failure_at', epochMs(db))
    .addColumn('last_failure_status', 'integer')
    .addColumn('last_failure_error', 'text')
    .addColumn('consecutive_failures', 'integer', (c) => c.notNull().defaultTo(sql`0`))
    .addColumn('failing_since', epochMs(db))
    .execute();

  await db.schema
    .createTable('subscription_rate_windows')
    .addColumn('subscription_id', 'text', (c) => c.primaryKey().references('subscriptions.id').onDelete('cascade'))
    .addColumn('window_start', epochMs(db), (c) => c.notNull())
    .addColumn('granted', 'integer', (c) => c.notNull())
    .execute();

  await db.schema
    .createIndex('notifications_subscription_pending_idx')
    .on('notifications')
    .column('subscription_id')
    .where((eb) => eb.and([eb(sql.ref('status'), '=', 'pending'), eb(sql.ref('test'), '=', 0)]))
    .execute();
  await db.schema.createIndex('notifications_subscription_failed_idx').on('notifications').columns(['subscription_id', 'completed_at', 'id']).where(sql.ref('status'), '=', 'failed').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('notifications_subscription_failed_idx').execute();
  await db.schema.dropIndex('notifications_subscription_pending_idx').execute();
  await db.schema.dropTable('subscription_rate_windows').execute();
  await db.schema.dropTable('subscription_health').execute();
  await db.schema.dropTable('subscription_stats').execute();
  await db.schema.alterTable('subscriptions').dropColumn('rate_limit').execute();
  await db.schema.alterTable('subscriptions').dropColumn('disabled_at').execute();
  await db.schema.alterTable('subscriptions').dropColumn('disabled_reason').execute();
}
