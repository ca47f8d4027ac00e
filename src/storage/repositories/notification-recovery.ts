import { sql } from 'kysely';
import type { Executor } from '../database.js';
import { dialectOf } from '../dialect.js';
import { precompiled } from '../precompiled.js';

/**
 * Recovery (POST /subscriptions/{id}/recover, src/services/recover-notifications.ts): the failed
 * notifications of one subscription in a window of completion times, a page at a time, and taking
 * a page back to pending. Every statement is one fixed SQL text (precompiled): a page's ids travel
 * as one parameter (`StorageDialect.list`). `status = 'failed'` and `test = 0` are literals, so both databases plan
 * the page on the partial index `notifications_subscription_failed_idx (subscription_id,
 * completed_at, id) where status = 'failed'` (migration 009).
 */

export interface FailedNotificationKey {
  id: string;
  completed_at: number;
}

/**
 * The next `limit` failed, non-test notifications of the subscription with completed_at < `until`,
 * after the keyset cursor (`afterAt`, `afterId`) in (completed_at, id) order. The first page of a
 * window starting at `since` passes (since, ''): ids are never empty, so it starts at since inclusive.
 */
const selectFailedPage = precompiled<[string, number, string, number, number], FailedNotificationKey>(
  (_db, subscriptionId, afterAt, afterId, until, limit) =>
    sql<FailedNotificationKey>`select id, completed_at from notifications
          where subscription_id = ${subscriptionId} and status = 'failed' and test = 0
            and (completed_at, id) > (cast(${afterAt} as bigint), cast(${afterId} as text)) and completed_at < cast(${until} as bigint)
          order by completed_at, id limit cast(${limit} as int)`,
);

export function findFailedPage(db: Executor, page: { subscriptionId: string; after: { at: number; id: string }; until: number; limit: number }): Promise<FailedNotificationKey[]> {
  return selectFailedPage(db, page.subscriptionId, page.after.at, page.after.id, page.until, page.limit);
}

/**
 * PostgreSQL: the transaction that takes a page first waits until no other recovery of the same
 * subscription holds a page's transaction open (a transaction-level advisory lock on a hash of the
 * id; a collision only makes two subscriptions take turns). Its UPDATE then starts after the other
 * one committed and sees that other's rows no longer failed, without waiting on row locks. Row
 * locks alone are taken in the order the UPDATE's plan reads the rows, and plans change with the
 * statistics: with an earlier `where id in (select jsonb_array_elements_text(…))`, locking in the
 * order of a hash of the list, concurrent calls with overlapping pages deadlocked (six calls at
 * once, test/notifications/recovery.test.ts). SQLite needs nothing: one writer at a time.
 */
export async function lockRecoveryOf(tx: Executor, subscriptionId: string): Promise<void> {
  await dialectOf(tx).serialize(tx, `recover:${subscriptionId}`);
}
