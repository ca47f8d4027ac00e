import type { Db, Executor } from '../storage/database.js';
import { DELIVERY_KIND, DELIVERY_RUNS_WITHOUT_OUTCOME, handedOff, leasedRow, notifyOtherProcesses, type DeliveryPayload, type JobSignals, type LeaseOffer } from '../storage/queue/index.js';
import { findNotification, releaseWaitingFor, retryNotificationNow, toNotification } from '../storage/repositories/notifications.js';
import type { NotificationsTable } from '../storage/tables/index.js';
import type { Notification } from '../domain/notifications/notification.js';

/** The kind the worker knows deliveries by (its handler, its wake-ups); each is a notification row (delivery-rows.ts). */
export const DELIVER_NOTIFICATION = DELIVERY_KIND;
export type DeliverNotificationPayload = DeliveryPayload;

/**
 * A batch's hand-off (`leaseTo`): of the notifications it is about to insert, those due now are
 * leased to its worker as far as the offer has room for their account (what a claim would write),
 * and started after the commit; the others are left to a claim (`declined`). Returns the rows to
 * insert.
 */
export function offerDeliveries<Row extends NotificationsTable>(rows: readonly Row[], offer: LeaseOffer | undefined, now: number): Row[] {
  if (!offer?.kinds.has(DELIVER_NOTIFICATION)) return [...rows];
  return rows.map((row) => {
    if (row.run_at === null || row.run_at > now || row.status !== 'pending') return row;
    if (offer.room <= 0 || offer.excludedGroups.has(row.account_id)) {
      offer.declined += 1;
      return row;
    }
    offer.room -= 1;
    const leased = leasedRow(row, offer.lease);
    offer.taken.push(handedOff(leased, DELIVERY_RUNS_WITHOUT_OUTCOME));
    return leased;
  });
}

/**
 * Notification order (docs/delivery.md, "Order"): in the transaction that ends notifications
 * (succeeded, or failed after their last attempt or without one), after the statement that ended
 * them, the notifications held behind them are released: due now. One statement when nothing waits.
 */
export async function releaseHeld(tx: Executor, endedIds: readonly string[], now: number): Promise<void> {
  await releaseWaitingFor(tx, endedIds, now);
}

/**
 * Manual retry: one extra attempt now, for a notification waiting for its next attempt or ended;
 * it uses none of the automatic attempts and leaves their schedule as it was (docs/delivery.md,
 * "Manual retry"). An attempt in flight (a lease that has not ended) is left alone: no duplicate.
 */
export async function scheduleManualRetry(db: Db, signals: JobSignals, notificationId: string, now: number): Promise<Notification> {
  const row = await db.transaction().execute(async (tx) => {
    await retryNotificationNow(tx, notificationId, now);
    await notifyOtherProcesses(tx, [DELIVER_NOTIFICATION]);
    return findNotification(tx, notificationId);
  });
  signals.enqueued([DELIVER_NOTIFICATION]);
  return toNotification(row!);
}
