import { newId } from '../../domain/ids.js';
import type { Executor } from '../database.js';
import type { NotificationAttemptsTable, NotificationsTable, NotificationStatus } from '../tables/index.js';

export type NotificationRow = NotificationsTable;
export type NotificationAttemptRow = NotificationAttemptsTable;

export async function insertNotifications(db: Executor, rows: NotificationsTable[]): Promise<void> {
  if (rows.length > 0) await db.insertInto('notifications').values(rows).execute();
}

export async function findNotification(db: Executor, id: string, accountId?: string): Promise<NotificationsTable | undefined> {
  let query = db.selectFrom('notifications').selectAll().where('id', '=', id);
  if (accountId !== undefined) query = query.where('account_id', '=', accountId);
  return query.executeTakeFirst();
}

export interface NotificationFilter {
  accountId: string;
  requestId?: string;
  subscriptionId?: string;
  status?: NotificationStatus;
  /** Id of the last notification of the previous page (ids sort by creation time). */
  before?: string;
  limit: number;
}

/** Newest first; one extra row tells whether another page follows. */
export async function listNotifications(db: Executor, filter: NotificationFilter): Promise<{ rows: NotificationsTable[]; more: boolean }> {
  let query = db.selectFrom('notifications').selectAll().where('account_id', '=', filter.accountId);
  if (filter.requestId) query = query.where('request_id', '=', filter.requestId);
  if (filter.subscriptionId) query = query.where('subscription_id', '=', filter.subscriptionId);
  if (filter.status) query = query.where('status', '=', filter.status);
  if (filter.before) query = query.where('id', '<', filter.before);
  const rows = await query.orderBy('id', 'desc').limit(filter.limit + 1).execute();
  return { rows: rows.slice(0, filter.limit), more: rows.length > filter.limit };
}

export async function listAttempts(db: Executor, notificationId: string): Promise<NotificationAttemptsTable[]> {
  return db.selectFrom('notification_attempts').selectAll().where('notification_id', '=', notificationId).orderBy('attempt').execute();
}

/** One finished attempt and the state its notification moves to. */
export interface AttemptOutcome {
  attempt: NotificationAttemptsTable;
  status: NotificationStatus;
  nextAttemptAt: number | null;
  now: number;
}

/**
 * Logs finished attempts and moves their notifications on, in the caller's transaction: one
 * multi-row insert, and one update per distinct outcome (typically one: every call answered 2xx
 * on its first attempt) instead of two statements per attempt.
 */
export async function recordAttempts(db: Executor, outcomes: AttemptOutcome[]): Promise<void> {
  for (let i = 0; i < outcomes.length; i += 200) {
    await db.insertInto('notification_attempts').values(outcomes.slice(i, i + 200).map((o) => o.attempt)).execute();
  }
  const groups = new Map<string, { changes: Partial<NotificationsTable>; ids: string[] }>();
  for (const { attempt, status, nextAttemptAt, now } of outcomes) {
    const changes = {
      status,
      attempt_count: attempt.attempt,
      next_attempt_at: nextAttemptAt,
      last_status_code: attempt.status_code,
      last_error: attempt.error,
      updated_at: now,
      completed_at: status === 'pending' ? null : now,
    };
    const key = JSON.stringify(changes);
    const group = groups.get(key);
    if (group) group.ids.push(attempt.notification_id);
    else groups.set(key, { changes, ids: [attempt.notification_id] });
  }
  for (const { changes, ids } of groups.values()) {
    for (let i = 0; i < ids.length; i += 500) {
      await db.updateTable('notifications').set(changes).where('id', 'in', ids.slice(i, i + 500)).execute();
    }
  }
}

/** A manual retry puts a finished notification back in the queue for one more attempt. */
export async function markNotificationPending(db: Executor, id: string, at: number): Promise<void> {
  await db.updateTable('notifications').set({ status: 'pending', next_attempt_at: at, updated_at: at, completed_at: null }).where('id', '=', id).execute();
}

/** A new notification, pending and due now; its id (`msg_…`) becomes the `webhook-id`. */
export function newNotificationRow(
  input: { accountId: string; requestId: string; subscriptionId: string | null; event: NotificationsTable['event']; url: string; payload: string },
  now: number,
): NotificationsTable {
  return {
    id: newId('msg', now),
    account_id: input.accountId,
    request_id: input.requestId,
    subscription_id: input.subscriptionId,
    event: input.event,
    url: input.url,
    payload: input.payload,
    status: 'pending',
    attempt_count: 0,
    next_attempt_at: now,
    last_status_code: null,
    last_error: null,
    created_at: now,
    updated_at: now,
    completed_at: null,
  };
}
