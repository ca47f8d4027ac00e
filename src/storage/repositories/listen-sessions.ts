import { firstIdAt } from '../../domain/ids.js';
import type { Executor } from '../database.js';
import { LISTEN_URL_PREFIX, listenUrl } from '../deliveries.js';
import type { ListenSessionsTable, NotificationsTable } from '../tables/index.js';

export interface ListenSession {
  id: string;
  accountId: string;
  events: string[];
  createdAt: number;
  expiresAt: number;
}

function toSession(row: ListenSessionsTable): ListenSession {
  return { id: row.id, accountId: row.account_id, events: JSON.parse(row.events) as string[], createdAt: Number(row.created_at), expiresAt: Number(row.expires_at) };
}

export async function insertListenSession(db: Executor, session: ListenSession): Promise<void> {
  await db
    .insertInto('listen_sessions')
    .values({ id: session.id, account_id: session.accountId, events: JSON.stringify(session.events), created_at: session.createdAt, expires_at: session.expiresAt })
    .execute();
}

/** The account's session, ended or not (undefined: another account's, or swept). */
export async function findListenSession(db: Executor, accountId: string, id: string): Promise<ListenSession | undefined> {
  const row = await db.selectFrom('listen_sessions').selectAll().where('id', '=', id).where('account_id', '=', accountId).executeTakeFirst();
  return row && toSession(row);
}

/** Every session not ended at `now`: the worker's whole read of the table, once a second. */
export async function listLiveListenSessions(db: Executor, now: number): Promise<ListenSession[]> {
  return (await db.selectFrom('listen_sessions').selectAll().where('expires_at', '>', now).execute()).map(toSession);
}

/** A live session stays live until `until`; false when it had ended already (an ended session never comes back). */
export async function extendListenSession(db: Executor, id: string, now: number, until: number): Promise<boolean> {
  const result = await db.updateTable('listen_sessions').set({ expires_at: until }).where('id', '=', id).where('expires_at', '>', now).executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** Ends a session now: its CLI stopped. The row stays until the maintenance sweep removes its last copies. */
export async function endListenSession(db: Executor, id: string, now: number): Promise<void> {
  await db.updateTable('listen_sessions').set({ expires_at: now }).where('id', '=', id).where('expires_at', '>', now).execute();
}

/**
 * Removes the copies of a session that no CLI forwarded (pending: a copy is settled by its one
 * attempt), from the account's index starting at the session's creation.
 */
export async function deleteUnforwardedCopies(db: Executor, session: Pick<ListenSession, 'id' | 'accountId' | 'createdAt'>): Promise<number> {
  const result = await db
    .deleteFrom('notifications')
    .where('account_id', '=', session.accountId)
    .where('id', '>=', firstIdAt('msg', session.createdAt))
    .where('url', '=', listenUrl(session.id))
    .where('status', '=', 'pending')
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** Sessions that ended before `before`, to be swept. */
export async function listEndedListenSessions(db: Executor, before: number, limit: number): Promise<ListenSession[]> {
  return (await db.selectFrom('listen_sessions').selectAll().where('expires_at', '<=', before).orderBy('expires_at').limit(limit).execute()).map(toSession);
}

export async function deleteListenSession(db: Executor, id: string): Promise<void> {
  await db.deleteFrom('listen_sessions').where('id', '=', id).execute();
}

/** One copy of the session (its account's), as stored. */
export async function findListenCopy(db: Executor, session: ListenSession, notificationId: string): Promise<NotificationsTable | undefined> {
  return db.selectFrom('notifications').selectAll().where('id', '=', notificationId).where('account_id', '=', session.accountId).where('url', '=', listenUrl(session.id)).executeTakeFirst();
}

/**
 * Where the outcome a copy was made of really went: the URL of the first notification written for
 * the same request and event to a receiver (not a copy), on the request's index; undefined when
 * it went nowhere. Its secret signs the copy.
 */
export async function findOriginalUrl(db: Executor, copy: Pick<NotificationsTable, 'request_id' | 'event' | 'account_id'>): Promise<string | undefined> {
  const row = await db
    .selectFrom('notifications')
    .select('url')
    .where('request_id', '=', copy.request_id)
    .where('account_id', '=', copy.account_id)
    .where('event', '=', copy.event)
    .where('url', 'not like', `${LISTEN_URL_PREFIX}%`)
    .orderBy('id')
    .limit(1)
    .executeTakeFirst();
  return row?.url;
}
