import { conflict, notFound } from '../domain/errors.js';
import type { Db, Executor } from '../storage/database.js';
import { notifyOtherProcesses, type JobSignals } from '../storage/queue/index.js';
import { DELIVERIES, LISTEN_URL_PREFIX, retryNow } from '../storage/deliveries.js';
import { findNotification, listAttempts, listNotifications as listNotificationRows, toDeliveryAttempt, toNotification, type NotificationPage } from '../storage/repositories/notifications.js';
import { readFromReplica, type ReplicaReads } from './replica-reads.js';

/** The use cases behind the delivery log (`/notifications`): read it, and retry one notification by hand. */

export interface NotificationsContext extends ReplicaReads {
  db: Db;
  /** Wakes this process's worker after the retry is committed. */
  signals: JobSignals;
  clock: () => number;
}

/** The cursor of the next page: `before` is the last id of the previous one. */
type NotificationListQuery = Omit<NotificationPage, 'before'> & { cursor?: string | undefined };

/** One page of the account's delivery log, newest first, and the cursor of the next (null on the last); from the replica when there is one. */
export async function listNotifications(reads: ReplicaReads, query: NotificationListQuery) {
  const { cursor, ...filter } = query;
  const { rows, more } = await readFromReplica(reads, (db) => listNotificationRows(db, { ...filter, before: cursor }));
  return { notifications: rows.map(toNotification), nextCursor: more ? rows[rows.length - 1]!.id : null };
}

/** The account's notification with every attempt, oldest first; another account's is not found. From the replica, or the primary when the replica does not have it yet. */
export async function getNotification(reads: ReplicaReads, accountId: string, id: string) {
  const found = await readFromReplica(
    reads,
    async (db: Executor) => {
      const row = await findNotification(db, id, accountId);
      return row && { notification: toNotification(row), attempts: (await listAttempts(db, row.id)).map(toDeliveryAttempt) };
    },
    (answer) => answer === undefined,
  );
  if (!found) throw notFound('notification');
  return found;
}

/**
 * One extra attempt now for the account's notification (`retryNow`: it uses none of the automatic
 * attempts and leaves their schedule as it was; an attempt in flight is left alone, no duplicate;
 * docs/delivery.md, "Manual retry"). A copy forwarded by `rewards listen` is a conflict: only its
 * CLI forwards it (docs/delivery.md, "Listen copies"), the worker has no URL to send it to.
 */
export async function retryNotification(ctx: NotificationsContext, accountId: string, id: string) {
  const row = await findNotification(ctx.db, id, accountId);
  if (!row) throw notFound('notification');
  if (row.url.startsWith(LISTEN_URL_PREFIX))
    throw conflict(`notification "${row.id}" is a copy forwarded by rewards listen; it cannot be retried: retry the notification sent to your receiver instead`);
  const now = ctx.clock();
  const retried = await ctx.db.transaction().execute(async (tx) => {
    await retryNow(tx, row.id, now);
    await notifyOtherProcesses(tx, [DELIVERIES]);
    return findNotification(tx, row.id);
  });
  ctx.signals.enqueued([DELIVERIES]);
  return toNotification(retried!);
}
