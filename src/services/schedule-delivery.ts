import type { Db, Executor } from '../storage/database.js';
import { enqueueJobs, notifyOtherProcesses, type JobSignals, type LeaseOffer } from '../storage/queue/index.js';
import { findNotification, markNotificationPending, releaseWaitingFor, type NotificationRow } from '../storage/repositories/notifications.js';

export const DELIVER_NOTIFICATION = 'deliver-notification';

export interface DeliverNotificationPayload {
  notificationId: string;
}

/**
 * The notification counts its delivery attempts (RETRY_MAX_ATTEMPTS decides when it fails); its
 * delivery job's own attempts count the runs that ended without a recorded outcome (the handler
 * threw before or after the call: the database was away, say). After this many such runs the
 * notification ends `failed` (deliver-notification-job.ts, onExhausted) instead of staying pending.
 */
export const DELIVERY_RUNS_WITHOUT_OUTCOME = 20;

/** At most one delivery job per notification exists at a time (it is deleted when it completes). */
export const deliveryJobKey = (notificationId: string) => `deliver:${notificationId}`;

/**
 * Inside the caller's transaction: one delivery job per notification, due at its `runAt` (default
 * now), leased to `leaseTo`'s worker as far as it has room for the notification's account. One
 * statement whatever the times.
 */
export async function enqueueDeliveries(
  tx: Executor,
  deliveries: ReadonlyArray<{ notificationId: string; accountId: string; runAt?: number }>,
  options: { now: number; leaseTo?: LeaseOffer | undefined },
): Promise<void> {
  await enqueueJobs(
    tx,
    deliveries.map(({ notificationId, accountId, runAt }) => ({
      kind: DELIVER_NOTIFICATION,
      payload: { notificationId } satisfies DeliverNotificationPayload,
      runAt: runAt ?? options.now,
      dedupeKey: deliveryJobKey(notificationId),
      maxAttempts: DELIVERY_RUNS_WITHOUT_OUTCOME,
      // Workers share their delivery slots fairly between accounts (docs/delivery.md, "Fair delivery").
      groupKey: accountId,
    })),
    { now: options.now, ...(options.leaseTo ? { leaseTo: options.leaseTo } : {}) },
  );
}

/**
 * Notification order (docs/delivery.md, "Order"): in the transaction that ends notifications
 * (succeeded, or failed after their last attempt or without one), after the statement that ended
 * them, the notifications held behind them are released and their delivery jobs enqueued, due now.
 * One statement when nothing waits.
 */
export async function releaseHeld(tx: Executor, endedIds: readonly string[], now: number): Promise<void> {
  const released = await releaseWaitingFor(tx, endedIds);
  if (released.length > 0) await enqueueDeliveries(tx, released, { now });
}

/**
 * Manual retry: one more attempt now. A waiting delivery job is moved to now; a finished
 * notification gets a new job. An attempt already in flight is left alone (no duplicate).
 */
export async function scheduleManualRetry(db: Db, signals: JobSignals, notificationId: string, now: number): Promise<NotificationRow> {
  const row = await db.transaction().execute(async (tx) => {
    const key = deliveryJobKey(notificationId);
    await tx.deleteFrom('jobs').where('dedupe_key', '=', key).where('state', '=', 'failed').execute();
    const moved = await tx
      .updateTable('jobs')
      .set({ run_at: now, updated_at: now })
      .where('dedupe_key', '=', key)
      .where('locked_by', 'is', null)
      .executeTakeFirst();
    const notification = await findNotification(tx, notificationId);
    if (Number(moved.numUpdatedRows) === 0) await enqueueDeliveries(tx, [{ notificationId, accountId: notification!.account_id }], { now });
    await markNotificationPending(tx, notificationId, now);
    await notifyOtherProcesses(tx, [DELIVER_NOTIFICATION]);
    return findNotification(tx, notificationId);
  });
  signals.enqueued([DELIVER_NOTIFICATION]);
  return row!;
}
