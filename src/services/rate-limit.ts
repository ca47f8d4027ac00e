import { sql } from 'kysely';
import type { Executor } from '../storage/database.js';
import { notifyOtherProcesses } from '../storage/queue/index.js';
import { deliveryJobKey, DELIVER_NOTIFICATION } from './schedule-delivery.js';

/**
 * A subscription's `rateLimit` (docs/subscriptions.md, "Rate limit"): the worker postpones the
 * deliveries over the limit to the window where their turn falls; their delivery job then carries
 * this note (`jobs.last_error`), so a change of the limit can find them.
 */
export const WAITING_FOR_RATE_LIMIT = 'waiting for its turn under the subscription rateLimit';

/** A change that lets deliveries go sooner than the old limit scheduled them: removed, or raised. */
export function liftsRateLimit(before: number | null, after: number | null): boolean {
  return before !== null && (after === null || after > before);
}

/**
 * Inside the transaction of a subscription update that lifts its limit: its deliveries waiting
 * for their turn under the old limit are due now (each asks for a turn again, under the new
 * limit). Retries waiting for their retry time are not touched. Workers in other processes are
 * woken (PostgreSQL); this one's takes them at its next poll. Returns how many were moved.
 */
export async function releaseRateLimitedDeliveries(tx: Executor, subscriptionId: string, now: number): Promise<number> {
  const moved = await tx
    .updateTable('jobs')
    .set({ run_at: now, last_error: null, updated_at: now })
    .where('state', '=', 'pending')
    .where('locked_by', 'is', null)
    .where('last_error', '=', WAITING_FOR_RATE_LIMIT)
    .where('run_at', '>', now)
    .where('dedupe_key', 'in', (eb) =>
      eb
        .selectFrom('notifications')
        .select(sql<string>`${deliveryJobKey('')} || notifications.id`.as('key'))
        .where('subscription_id', '=', subscriptionId)
        .where('status', '=', 'pending')
        // Test sends are never postponed; and so the partial index of pending notifications serves.
        .where('test', '=', 0),
    )
    .executeTakeFirst();
  const count = Number(moved.numUpdatedRows);
  if (count > 0) await notifyOtherProcesses(tx, [DELIVER_NOTIFICATION]);
  return count;
}
