import { sql } from 'kysely';
import type { HealthChange, StatsIncrement } from '../../domain/notifications/endpoint-health.js';
import type { Executor } from '../database.js';
import { HISTOGRAM_COLUMNS } from '../migrations/009_delivery_operations.js';
import { isPostgres } from '../migrations/types.js';
import { precompiled } from '../precompiled.js';
import type { SubscriptionHealthTable } from '../tables/index.js';

/**
 * A subscription's health rollup (subscription_stats, subscription_health), written by the attempt
 * log writer in the transaction that logs the attempts, and read by GET /subscriptions/{id}/stats.
 * Each write is one statement for the whole batch, fixed SQL text with the rows as one JSON
 * parameter (as recordAttempts), in subscription order (no deadlock between writers).
 */

const COUNT_COLUMNS = ['succeeded', 'retry', 'failed', ...HISTOGRAM_COLUMNS] as const;
const columnList = sql.raw(COUNT_COLUMNS.join(', '));
const addToStored = sql.raw(COUNT_COLUMNS.map((c) => `${c} = subscription_stats.${c} + excluded.${c}`).join(', '));

const upsertStats = precompiled((db, rows: string) =>
  isPostgres(db as never)
    ? sql`insert into subscription_stats (subscription_id, bucket_start, ${columnList})
          select e ->> 0, (e ->> 1)::bigint, ${sql.raw(COUNT_COLUMNS.map((_, i) => `(e ->> ${i + 2})::int`).join(', '))}
          from jsonb_array_elements(${rows}::jsonb) e
          on conflict (subscription_id, bucket_start) do update set ${addToStored}`
    : sql`insert into subscription_stats (subscription_id, bucket_start, ${columnList})
          select value ->> 0, value ->> 1, ${sql.raw(COUNT_COLUMNS.map((_, i) => `value ->> ${i + 2}`).join(', '))}
          from json_each(${rows}) where true
          on conflict (subscription_id, bucket_start) do update set ${addToStored}`,
);

/** The batch's success is newer than the stored one (or the batch's failure, for `f`). */
const newer = (prefix: 'last_success' | 'last_failure') =>
  sql.raw(`excluded.${prefix}_at is not null and (h.${prefix}_at is null or excluded.${prefix}_at >= h.${prefix}_at)`);
const mergeHealth = sql`
  last_success_status = case when ${newer('last_success')} then excluded.last_success_status else h.last_success_status end,
  last_success_at = case when ${newer('last_success')} then excluded.last_success_at else h.last_success_at end,
  last_failure_status = case when ${newer('last_failure')} then excluded.last_failure_status else h.last_failure_status end,
  last_failure_error = case when ${newer('last_failure')} then excluded.last_failure_error else h.last_failure_error end,
  last_failure_at = case when ${newer('last_failure')} then excluded.last_failure_at else h.last_failure_at end,
  consecutive_failures = case when excluded.last_success_at is not null then excluded.consecutive_failures else h.consecutive_failures + excluded.consecutive_failures end,
  failing_since = case when excluded.last_success_at is not null then excluded.failing_since else coalesce(h.failing_since, excluded.failing_since) end`;
const HEALTH_COLUMNS = sql.raw('subscription_id, last_success_at, last_success_status, last_failure_at, last_failure_status, last_failure_error, consecutive_failures, failing_since');

const upsertHealth = precompiled((db, rows: string) =>
  isPostgres(db as never)
    ? sql<{ subscription_id: string; failing_since: string | number | null }>`insert into subscription_health as h (${HEALTH_COLUMNS})
          select e ->> 0, (e ->> 1)::bigint, (e ->> 2)::int, (e ->> 3)::bigint, (e ->> 4)::int, e ->> 5, (e ->> 6)::int, (e ->> 7)::bigint
          from jsonb_array_elements(${rows}::jsonb) e
          on conflict (subscription_id) do update set ${mergeHealth}
          returning h.subscription_id, h.failing_since`
    : sql<{ subscription_id: string; failing_since: number | null }>`insert into subscription_health as h (${HEALTH_COLUMNS})
          select value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, value ->> 6, value ->> 7
          from json_each(${rows}) where true
          on conflict (subscription_id) do update set ${mergeHealth}
          returning subscription_id, failing_since`,
);

/** Adds a batch to the rollup; answers, per subscription in it, when its current run of failures began (null: none). */
export async function recordHealth(db: Executor, stats: StatsIncrement[], health: HealthChange[]): Promise<Array<{ subscriptionId: string; failingSince: number | null }>> {
  if (stats.length === 0) return [];
  await upsertStats(db, JSON.stringify(stats.map((row) => [row.subscriptionId, row.bucketStart, row.succeeded, row.retry, row.failed, ...row.histogram])));
  const rows = await upsertHealth(
    db,
    JSON.stringify(
      health.map((h) => [
        h.subscriptionId,
        h.lastSuccess?.at ?? null,
        h.lastSuccess?.statusCode ?? null,
        h.lastFailure?.at ?? null,
        h.lastFailure?.statusCode ?? null,
        h.lastFailure?.error ?? null,
        h.failuresAfterSuccess,
        h.firstFailureAfterSuccess,
      ]),
    ),
  );
  return rows.map((row) => ({ subscriptionId: row.subscription_id, failingSince: row.failing_since === null ? null : Number(row.failing_since) }));
}

export interface StatsTotals {
  succeeded: number;
  retry: number;
  failed: number;
  histogram: number[];
}

/** The subscription's attempts in the buckets from `fromBucket` on: one indexed range of at most 2,016 rows. */
export async function sumStats(db: Executor, subscriptionId: string, fromBucket: number): Promise<StatsTotals> {
  const row = await db
    .selectFrom('subscription_stats')
    .select(COUNT_COLUMNS.map((column) => sql<string | number | null>`sum(${sql.ref(column)})`.as(column)))
    .where('subscription_id', '=', subscriptionId)
    .where('bucket_start', '>=', fromBucket)
    .executeTakeFirstOrThrow();
  const value = (column: (typeof COUNT_COLUMNS)[number]) => Number(row[column] ?? 0);
  return { succeeded: value('succeeded'), retry: value('retry'), failed: value('failed'), histogram: HISTOGRAM_COLUMNS.map(value) };
}

export async function findHealth(db: Executor, subscriptionId: string): Promise<SubscriptionHealthTable | undefined> {
  const row = await db.selectFrom('subscription_health').selectAll().where('subscription_id', '=', subscriptionId).executeTakeFirst();
  if (!row) return undefined;
  const ms = (value: number | null) => (value === null ? null : Number(value));
  return { ...row, last_success_at: ms(row.last_success_at), last_failure_at: ms(row.last_failure_at), failing_since: ms(row.failing_since) };
}

/** Notifications of the subscription waiting for an attempt (test sends aside): the partial index on pending ones. */
export async function countPending(db: Executor, subscriptionId: string): Promise<number> {
  const row = await db
    .selectFrom('notifications')
    .select((eb) => eb.fn.countAll<string | number>().as('n'))
    .where('subscription_id', '=', subscriptionId)
    .where('status', '=', 'pending')
    .where('test', '=', 0)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** A re-enabled subscription's run of failures starts over (auto-disable counts from its next failure). */
export async function restartFailureRun(db: Executor, subscriptionId: string): Promise<void> {
  await db.updateTable('subscription_health').set({ consecutive_failures: 0, failing_since: null }).where('subscription_id', '=', subscriptionId).execute();
}

/**
 * Auto-disable, in the attempt log's transaction: the subscription goes inactive with its reason,
 * and what it still had pending ends `failed` with that reason. Answers the account when it was
 * active (false when someone else had switched it off meanwhile).
 */
export async function disableSubscription(
  db: Executor,
  subscriptionId: string,
  reason: string,
  now: number,
): Promise<{ accountId: string; failedPending: number; failedIds: string[] } | undefined> {
  const disabled = await db
    .updateTable('subscriptions')
    .set({ active: 0, disabled_reason: reason, disabled_at: now, updated_at: now })
    .where('id', '=', subscriptionId)
    .where('active', '=', 1)
    .returning('account_id')
    .executeTakeFirst();
  if (!disabled) return undefined;
  const failed = await db
    .updateTable('notifications')
    .set({ status: 'failed', last_error: `not sent: the subscription was switched off: ${reason}`, updated_at: now, completed_at: now })
    .where('subscription_id', '=', subscriptionId)
    .where('status', '=', 'pending')
    .where('test', '=', 0)
    .returning('id')
    .execute();
  return { accountId: disabled.account_id, failedPending: failed.length, failedIds: failed.map((row) => row.id) };
}

/** Housekeeping: rollup buckets older than the longest window. */
export async function deleteStatsBefore(db: Executor, before: number): Promise<number> {
  const result = await db.deleteFrom('subscription_stats').where('bucket_start', '<', before).executeTakeFirst();
  return Number(result.numDeletedRows);
}
