import { sql } from 'kysely';
import { failPendingOf } from '../deliveries.js';
import type { HealthChange, StatsIncrement } from '../../domain/notifications/endpoint-health.js';
import type { Executor } from '../database.js';
import { HISTOGRAM_COLUMNS } from '../migrations/009_delivery_operations.js';
import { dialectOf, type RecordColumnType } from '../dialect.js';
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

const STATS_COLUMNS: Record<string, RecordColumnType> = { subscription_id: 'text', bucket_start: 'bigint', ...Object.fromEntries(COUNT_COLUMNS.map((column) => [column, 'int'])) };

// `where true`: SQLite reads `on conflict` right after a select's `from` as part of a join.
const upsertStats = precompiled(
  (db, rows: string) =>
    sql`insert into subscription_stats (subscription_id, bucket_start, ${columnList})
          select subscription_id, bucket_start, ${columnList} from ${dialectOf(db).records(rows, 's', STATS_COLUMNS)} where true
          on conflict (subscription_id, bucket_start) do update set ${addToStored}`,
);

/** The batch's success is newer than the stored one (or the batch's failure, for `f`). */
const newer = (prefix: 'last_success' | 'last_failure') => sql.raw(`excluded.${prefix}_at is not null and (h.${prefix}_at is null or excluded.${prefix}_at >= h.${prefix}_at)`);
const mergeHealth = sql`
  last_success_status = case when ${newer('last_success')} then excluded.last_success_status else h.last_success_status end,
  last_success_at = case when ${newer('last_success')} then excluded.last_success_at else h.last_success_at end,
  last_failure_status = case when ${newer('last_failure')} then excluded.last_failure_status else h.last_failure_status end,
  last_failure_error = case when ${newer('last_failure')} then excluded.last_failure_error else h.last_failure_error end,
  last_failure_at = case when ${newer('last_failure')} then excluded.last_failure_at else h.last_failure_at end,
  consecutive_failures = case when excluded.last_success_at is not null then excluded.consecutive_failures else h.consecutive_failures + excluded.consecutive_failures end,
  failing_since = case when excluded.last_success_at is not null then excluded.failing_since else coalesce(h.failing_since, excluded.failing_since) end`;

const HEALTH_RECORD = {
  subscription_id: 'text',
  last_success_at: 'bigint',
  last_success_status: 'int',
  last_failure_at: 'bigint',
  last_failure_status: 'int',
  last_failure_error: 'text',
  consecutive_failures: 'int',
  failing_since: 'bigint',
} as const;
const HEALTH_COLUMNS = sql.raw(Object.keys(HEALTH_RECORD).join(', '));

const upsertHealth = precompiled(
  (db, rows: string) =>
    sql<{ subscription_id: string; failing_since: string | number | null }>`insert into subscription_health as h (${HEALTH_COLUMNS})
          select ${HEALTH_COLUMNS} from ${dialectOf(db).records(rows, 'n', HEALTH_RECORD)} where true
          on conflict (subscription_id) do update set ${mergeHealth}
          returning subscription_id, failing_since`,
);

/** Adds a batch to the rollup; answers, per subscription in it, when its current run of failures began (null: none). */
export async function recordHealth(db: Executor, stats: StatsIncrement[], health: HealthChange[]): Promise<Array<{ subscriptionId: string; failingSince: number | null }>> {
  if (stats.length === 0) return [];
  await upsertStats(
    db,
    JSON.stringify(
      stats.map((row) => ({
        subscription_id: row.subscriptionId,
        bucket_start: row.bucketStart,
        succeeded: row.succeeded,
        retry: row.retry,
        failed: row.failed,
        ...Object.fromEntries(HISTOGRAM_COLUMNS.map((column, i) => [column, row.histogram[i]])),
      })),
    ),
  );
  const rows = await upsertHealth(
    db,
    JSON.stringify(
      health.map((h) => ({
        subscription_id: h.subscriptionId,
        last_success_at: h.lastSuccess?.at ?? null,
        last_success_status: h.lastSuccess?.statusCode ?? null,
        last_failure_at: h.lastFailure?.at ?? null,
        last_failure_status: h.lastFailure?.statusCode ?? null,
        last_failure_error: h.lastFailure?.error ?? null,
        consecutive_failures: h.failuresAfterSuccess,
        failing_since: h.firstFailureAfterSuccess,
      })),
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

/**
 * The subscription's attempts in the rollup buckets of [since, until), summed per `bucketMs` from
 * `since`: one row per series bucket that has attempts (`index` 0 is the one starting at `since`).
 * One indexed range of at most 2,016 rows (`subscription_stats_pk`), grouped by the database.
 */
export async function sumStatsSeries(db: Executor, subscriptionId: string, range: { since: number; until: number; bucketMs: number }): Promise<Array<StatsTotals & { index: number }>> {
  const { since, until, bucketMs } = range;
  if (![since, until, bucketMs].every(Number.isSafeInteger) || bucketMs <= 0) throw new Error(`not a series range: ${since}, ${until}, ${bucketMs}`);
  // Integers written out (checked above): the same expression in the select and the group by.
  const index = sql<string | number>`(bucket_start - ${sql.lit(since)}) / ${sql.lit(bucketMs)}`;
  const rows = await db
    .selectFrom('subscription_stats')
    .select(index.as('series_index'))
    .select(COUNT_COLUMNS.map((column) => sql<string | number | null>`sum(${sql.ref(column)})`.as(column)))
    .where('subscription_id', '=', subscriptionId)
    .where('bucket_start', '>=', since)
    .where('bucket_start', '<', until)
    .groupBy(index)
    .execute();
  return rows.map((row) => {
    const value = (column: (typeof COUNT_COLUMNS)[number]) => Number(row[column] ?? 0);
    return { index: Number(row.series_index), succeeded: value('succeeded'), retry: value('retry'), failed: value('failed'), histogram: HISTOGRAM_COLUMNS.map(value) };
  });
}

export async function findHealth(db: Executor, subscriptionId: string): Promise<SubscriptionHealthTable | undefined> {
  const row = await db.selectFrom('subscription_health').selectAll().where('subscription_id', '=', subscriptionId).executeTakeFirst();
  if (!row) return undefined;
  const ms = (value: number | null) => (value === null ? null : Number(value));
  return { ...row, last_success_at: ms(row.last_success_at), last_failure_at: ms(row.last_failure_at), failing_since: ms(row.failing_since) };
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
): Promise<{ accountId: string; event: string; url: string; failedPending: number; failedIds: string[] } | undefined> {
  const disabled = await db
    .updateTable('subscriptions')
    .set({ active: 0, disabled_reason: reason, disabled_at: now, updated_at: now })
    .where('id', '=', subscriptionId)
    .where('active', '=', 1)
    .returning(['account_id', 'event', 'callback_url'])
    .executeTakeFirst();
  if (!disabled) return undefined;
  const failedIds = await failPendingOf(db, subscriptionId, `not sent: the subscription was switched off: ${reason}`, now);
  return { accountId: disabled.account_id, event: disabled.event, url: disabled.callback_url, failedPending: failedIds.length, failedIds };
}

/** Housekeeping: rollup buckets older than the longest window. */
export async function deleteStatsBefore(db: Executor, before: number): Promise<number> {
  const result = await db.deleteFrom('subscription_stats').where('bucket_start', '<', before).executeTakeFirst();
  return Number(result.numDeletedRows);
}
