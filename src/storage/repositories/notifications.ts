import { NOTIFICATION_EVENTS } from '../../domain/notifications/events.js';
import { orderKey } from '../../domain/notifications/order.js';
import { sql, type SelectQueryBuilder } from 'kysely';
import { firstIdAt, newId } from '../../domain/ids.js';
import type { Executor } from '../database.js';
import { dialectOf, type RecordColumnType } from '../dialect.js';
import { precompiled } from '../precompiled.js';
import { LISTEN_URL_PREFIX, newSchedule, settleDeliveries } from '../deliveries.js';
import type { DeliveryAttempt, Notification, NotificationStatus } from '../../domain/notifications/notification.js';
import type { Database, NotificationAttemptsTable, NotificationsTable } from '../tables/index.js';

/** A notification with when its next attempt is due (null: none scheduled, or one in flight). */
export type NotificationRow = NotificationsTable & { next_attempt_at: number | null };
export type NotificationAttemptRow = NotificationAttemptsTable;

/** The domain's notification of a row: request_id '' (an operational notification about no request) is null. */
export function toNotification(row: NotificationRow): Notification {
  return {
    id: row.id,
    requestId: row.request_id === '' ? null : row.request_id,
    subscriptionId: row.subscription_id,
    event: row.event,
    url: row.url,
    payload: row.payload,
    status: row.status,
    attemptCount: row.attempt_count,
    nextAttemptAt: row.next_attempt_at,
    lastStatusCode: row.last_status_code,
    lastError: row.last_error,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    completedAt: row.completed_at,
    test: row.test === 1,
    waitsFor: row.waits_for,
    heldAt: row.held_at === null ? null : Number(row.held_at),
  };
}

/** The domain's attempt of a row: its headers are stored as compact JSON. */
export function toDeliveryAttempt(row: NotificationAttemptRow): DeliveryAttempt {
  return {
    notificationId: row.notification_id,
    attempt: row.attempt,
    startedAt: row.started_at,
    url: row.url,
    statusCode: row.status_code,
    latencyMs: row.latency_ms,
    responseBody: row.response_body,
    error: row.error,
    outcome: row.outcome,
    requestHeaders: row.request_headers === null ? null : (JSON.parse(row.request_headers) as Record<string, string>),
    retryAfter: row.retry_after,
  };
}

/** Rows per multi-row insert: well under SQLite's and PostgreSQL's bound-parameter limits. */
const INSERT_CHUNK = 500;

/** Multi-row inserts of INSERT_CHUNK rows at most: one statement for the usual batch. */
export async function insertNotifications(db: Executor, rows: NotificationsTable[]): Promise<void> {
  for (let i = 0; i < rows.length; i += INSERT_CHUNK)
    await db
      .insertInto('notifications')
      .values(rows.slice(i, i + INSERT_CHUNK))
      .execute();
}

/** A notification's next attempt's time: the row's schedule while no attempt holds it. */
const nextAttemptAt = () => sql<number | null>`case when notifications.status = 'pending' and notifications.lease is null then notifications.run_at end`.as('next_attempt_at');

/** Notifications with their next attempt's time. */
function withSchedule(db: Executor) {
  return db.selectFrom('notifications').selectAll('notifications').select(nextAttemptAt());
}

export async function findNotification(db: Executor, id: string, accountId?: string): Promise<NotificationRow | undefined> {
  let query = withSchedule(db).where('notifications.id', '=', id);
  if (accountId !== undefined) query = query.where('notifications.account_id', '=', accountId);
  return query.executeTakeFirst();
}

/** What the delivery log is filtered by (GET /notifications); the stats' `pending` and `failed` count the same rows. */
export interface NotificationFilter {
  accountId: string;
  requestId?: string | undefined;
  subscriptionId?: string | undefined;
  status?: NotificationStatus | undefined;
  event?: NotificationsTable['event'] | undefined;
  /** Created at or after this time (epoch ms). */
  since?: number | undefined;
  /** Created before this time (epoch ms). */
  until?: number | undefined;
  /** The copies forwarded by `rewards listen` (url `listen:…`): left out, or alone; absent, listed with the others. */
  listenCopies?: 'exclude' | 'only' | undefined;
}

export interface NotificationPage extends NotificationFilter {
  /** Id of the last notification of the previous page (ids sort by creation time). */
  before?: string | undefined;
  limit: number;
}

const STATUSES: readonly NotificationStatus[] = ['pending', 'succeeded', 'failed'];

/**
 * The rows a filter names (and, for a page, those before its cursor): one predicate for the list
 * and for the counts, so that a figure and the list it stands for cannot disagree.
 * - `status`, `event` and `test` are written as literals (after checking them against their few
 *   values): a partial index is used only where the query states its predicate, and SQLite does
 *   not see through a bound parameter.
 * - `since` and `until` are bounds on the id: an id begins with the millisecond of its creation,
 *   the clock reading `created_at` holds too (newNotificationRow), so a range of creation times
 *   is a range of ids: a range of `notifications_account_idx (account_id, id)`, and on PostgreSQL
 *   only the partitions of those periods are read.
 * - `test`: only test sends (1) or only the others (0), for the halves of `idHalves`.
 */
function whereFilter<O>(
  query: SelectQueryBuilder<Database, 'notifications', O>,
  filter: NotificationFilter & { before?: string | undefined },
  test?: 0 | 1,
): SelectQueryBuilder<Database, 'notifications', O> {
  let q = query.where('notifications.account_id', '=', filter.accountId);
  if (filter.requestId !== undefined) q = q.where('notifications.request_id', '=', filter.requestId);
  if (filter.subscriptionId !== undefined) q = q.where('notifications.subscription_id', '=', filter.subscriptionId);
  if (filter.status !== undefined) {
    if (!STATUSES.includes(filter.status)) throw new Error(`not a notification status: ${filter.status}`);
    q = q.where(sql.ref('notifications.status'), '=', sql.lit(filter.status));
  }
  if (filter.event !== undefined) {
    if (!NOTIFICATION_EVENTS.includes(filter.event)) throw new Error(`not a notification event: ${filter.event}`);
    q = q.where(sql.ref('notifications.event'), '=', sql.lit(filter.event));
  }
  if (test !== undefined) q = q.where(sql.ref('notifications.test'), '=', sql.lit(test));
  if (filter.listenCopies !== undefined) q = q.where('notifications.url', filter.listenCopies === 'only' ? 'like' : 'not like', `${LISTEN_URL_PREFIX}%`);
  if (filter.since !== undefined) q = q.where('notifications.id', '>=', firstIdAt('msg', filter.since));
  if (filter.until !== undefined) q = q.where('notifications.id', '<', firstIdAt('msg', filter.until));
  if (filter.before) q = q.where('notifications.id', '<', filter.before);
  return q;
}

/**
 * A subscription's pending notifications are in two partial indexes on `subscription_id`:
 * `notifications_subscription_pending_idx` holds those that are not test sends,
 * `notifications_test_sends_idx` the test sends. Neither planner reads both for one query (and a
 * page asked of either would walk the account's log instead), so such a filter is read as two
 * queries, `test = 0` and `test = 1`, each of which states one index's predicate.
 */
const inTwoHalves = (filter: NotificationFilter) => filter.subscriptionId !== undefined && filter.status === 'pending';

/**
 * Newest first; one extra row tells whether another page follows.
 *
 * Most filters walk `notifications_account_idx` (or, for `failed`, `notifications_account_failed_idx`)
 * from the newest row and keep the matches. Two find their few rows by another index first, then
 * take the page from them: a request's notifications (`notifications_request_idx`), and a
 * subscription's pending ones (`inTwoHalves`). Asked for the newest rows at once, a planner walks
 * the account's log instead whenever it expects matches to be frequent (SQLite, which keeps no
 * statistics, always; PostgreSQL when pending notifications are many overall, another account's
 * backlog), and for a request or a subscription with fewer matches than a page it reads the
 * account's whole log. Found first, they cost what they number: a handful for a request, the
 * subscription's pending count (the figure GET /subscriptions/{id}/stats shows) for the other.
 */
export async function listNotifications(db: Executor, page: NotificationPage): Promise<{ rows: NotificationRow[]; more: boolean }> {
  const limit = page.limit + 1;
  let rows: NotificationRow[];
  if (page.requestId !== undefined || inTwoHalves(page)) {
    const ids = (test?: 0 | 1) => whereFilter(db.selectFrom('notifications').select('notifications.id'), page, test);
    const candidates = inTwoHalves(page) ? ids(0).unionAll(ids(1)) : ids();
    rows = await db
      .with(
        (cte) => cte('candidates').materialized(),
        () => candidates,
      )
      .selectFrom('notifications')
      .selectAll('notifications')
      .select(nextAttemptAt())
      .where('notifications.id', 'in', (eb) => eb.selectFrom('candidates').select('candidates.id').orderBy('candidates.id', 'desc').limit(limit))
      .orderBy('notifications.id', 'desc')
      .execute();
  } else {
    rows = await whereFilter(withSchedule(db), page).orderBy('notifications.id', 'desc').limit(limit).execute();
  }
  return { rows: rows.slice(0, page.limit), more: rows.length > page.limit };
}

/** How many notifications the filter names: the rows listNotifications pages through, read from the same indexes. */
export async function countNotifications(db: Executor, filter: NotificationFilter): Promise<number> {
  const count = (test?: 0 | 1) =>
    whereFilter(
      db.selectFrom('notifications').select((eb) => eb.fn.countAll<string | number>().as('n')),
      filter,
      test,
    );
  if (!inTwoHalves(filter)) return Number((await count().executeTakeFirstOrThrow()).n);
  const { rows } = await sql<{ n: string | number }>`select (${count(0)}) + (${count(1)}) as n`.execute(db);
  return Number(rows[0]!.n);
}

export async function listAttempts(db: Executor, notificationId: string): Promise<NotificationAttemptsTable[]> {
  return db.selectFrom('notification_attempts').selectAll().where('notification_id', '=', notificationId).orderBy('attempt').execute();
}

/** One finished attempt, the lease it was made under, and the state its notification moves to. */
export interface AttemptOutcome {
  attempt: NotificationAttemptsTable;
  /** The lease its delivery was held under (delivery-ownership.ts): the outcome is written only while it still is. */
  lease: string;
  status: NotificationStatus;
  /** When the next attempt is due (a retry), or null. */
  nextAttemptAt: number | null;
  now: number;
}

const ATTEMPT_COLUMNS = {
  notification_id: 'text',
  attempt: 'int',
  started_at: 'bigint',
  url: 'text',
  status_code: 'int',
  latency_ms: 'int',
  response_body: 'text',
  error: 'text',
  outcome: 'text',
  request_headers: 'text',
  retry_after: 'text',
} as const satisfies Record<keyof NotificationAttemptsTable, RecordColumnType>;
const attemptColumns = sql.raw(Object.keys(ATTEMPT_COLUMNS).join(', '));

const insertAttempts = precompiled((db, rows: string) => sql`insert into notification_attempts (${attemptColumns}) select ${attemptColumns} from ${dialectOf(db).records(rows, 'a', ATTEMPT_COLUMNS)}`);

/**
 * Settles finished attempts, in the caller's transaction: each notification still held under the
 * attempt's lease moves on (`settleDeliveries`: its outcome, its next attempt's time, its lease
 * let go) and its attempt is logged; an attempt whose delivery another worker took over writes
 * nothing (rule 4 of delivery-ownership.ts). Two statements for the whole batch, each one fixed
 * SQL text with the rows as one JSON parameter. Answers the ids settled, and those of them that something is held behind
 * (`has_waiters`, docs/delivery.md "Order") as the statement saw them: on PostgreSQL a
 * transaction holding one concurrently had it locked, so this statement waited for its commit.
 */
export async function recordAttempts(db: Executor, outcomes: AttemptOutcome[]): Promise<{ settled: Set<string>; waitedFor: Set<string> }> {
  const result = await settleDeliveries(
    db,
    outcomes.map(({ attempt, lease, status, nextAttemptAt, now }) => ({
      id: attempt.notification_id,
      lease,
      status,
      attemptCount: attempt.attempt,
      lastStatusCode: attempt.status_code,
      lastError: attempt.error,
      nextAttemptAt,
      now,
    })),
  );
  const logged = outcomes.filter(({ attempt }) => result.settled.has(attempt.notification_id)).map(({ attempt }) => attempt);
  if (logged.length > 0) await insertAttempts(db, JSON.stringify(logged));
  return result;
}

/** Notification order: the registered notifications that processed ones are being held behind (their rows are locked by the caller on PostgreSQL). */
export async function markHasWaiters(db: Executor, ids: readonly string[]): Promise<void> {
  if (ids.length > 0)
    await db
      .updateTable('notifications')
      .set({ has_waiters: 1 })
      .where('id', 'in', [...ids])
      .execute();
}

export type NotificationForDelivery = NotificationsTable & { subscription_updated_at: number | null; account_active: number | null };

/**
 * Notifications by id with, in the same query, when their subscription last changed (null: deleted
 * or none) and whether their account is active (a deactivated account's notifications are not sent).
 */
const notificationsForDelivery = precompiled<[string | string[]], NotificationForDelivery>((db, ids) =>
  db
    .selectFrom('notifications')
    .leftJoin('subscriptions', 'subscriptions.id', 'notifications.subscription_id')
    .leftJoin('accounts', 'accounts.id', 'notifications.account_id')
    .selectAll('notifications')
    .select(['subscriptions.updated_at as subscription_updated_at', 'accounts.active as account_active'])
    .where(dialectOf(db).inList(sql.ref('notifications.id'), ids)),
);

export function findNotificationsForDelivery(db: Executor, ids: readonly string[]): Promise<NotificationForDelivery[]> {
  return notificationsForDelivery(db, dialectOf(db).list(ids));
}

/**
 * Notification order (docs/delivery.md, "Order"): the pending `registered-requests` notifications
 * of the given requests, one statement per batch (the request index). On PostgreSQL the rows are
 * locked (FOR UPDATE) until the caller commits: a transaction that ends one of them concurrently
 * either committed before (the row, re-read after the lock, is no longer pending: nothing is held)
 * or waits for the caller's commit, and then releases in a later statement, whose snapshot sees the
 * held notification.
 */
const pendingRegistered = precompiled((db, requestIds: string) => {
  const dialect = dialectOf(db);
  return sql<{ id: string; request_id: string; url: string }>`select n.id, n.request_id, n.url from notifications n
          join ${dialect.records(requestIds, 'w', { request_id: 'text' })} on n.request_id = w.request_id
          where n.event = 'registered-requests' and n.status = 'pending' and n.test = 0
          order by n.id${dialect.rowLock({ of: 'n' })}`;
});

/**
 * Keyed by `orderKey(request id, url)` (same request, same receiver): the registered notification
 * a processed one to that receiver waits for, the oldest when there are several.
 */
export async function findPendingRegistered(db: Executor, pairs: ReadonlyArray<{ requestId: string; url: string }>): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  if (pairs.length === 0) return found;
  const requestIds = [...new Set(pairs.map((p) => p.requestId))];
  const result = await pendingRegistered(db, JSON.stringify(requestIds.map((request_id) => ({ request_id }))));
  for (const row of result) {
    const key = orderKey(row.request_id, row.url);
    if (!found.has(key)) found.set(key, row.id);
  }
  return found;
}

/** A new notification, pending and due now (its own delivery); its id (`msg_…`) becomes the `webhook-id`. */
export function newNotificationRow(
  input: { accountId: string; requestId: string; subscriptionId: string | null; event: NotificationsTable['event']; url: string; payload: string; test?: boolean; traceParent?: string | undefined },
  now: number,
): NotificationsTable {
  const row: NotificationsTable = {
    id: newId('msg', now),
    account_id: input.accountId,
    request_id: input.requestId,
    subscription_id: input.subscriptionId,
    event: input.event,
    url: input.url,
    payload: input.payload,
    status: 'pending',
    attempt_count: 0,
    last_status_code: null,
    last_error: null,
    created_at: now,
    updated_at: now,
    completed_at: null,
    test: input.test ? 1 : 0,
    waits_for: null,
    has_waiters: 0,
    ...newSchedule(now),
    manual_attempts: null,
    manual_resume_at: null,
  };
  // Traces on only: while they are off the column is not even in the insert.
  if (input.traceParent !== undefined) row.trace_parent = input.traceParent;
  return row;
}

/**
 * When the subscription's test sends made since `since` were made, oldest first, at most `limit`
 * (the partial index of test sends: a flood of ordinary notifications costs this nothing).
 */
export async function recentTestSendTimes(db: Executor, subscriptionId: string, since: number, limit: number): Promise<number[]> {
  const rows = await db
    .selectFrom('notifications')
    .select('created_at')
    .where('subscription_id', '=', subscriptionId)
    .where('test', '=', 1)
    .where('created_at', '>', since)
    .orderBy('created_at')
    .limit(limit)
    .execute();
  return rows.map((row) => Number(row.created_at));
}
