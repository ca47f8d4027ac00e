import type { SecretBox } from '../../domain/crypto/secret-box.js';
import type { SubscriptionEvent } from '../../domain/notifications/events.js';
import type { CallbackAuthorization, Subscription } from '../../domain/subscriptions/types.js';
import type { Db, Executor } from '../database.js';
import { precompiled } from '../precompiled.js';
import { dialectOf } from '../dialect.js';
import type { SubscriptionsTable } from '../tables/index.js';

export type SubscriptionRow = SubscriptionsTable;
export type SubscriptionRowChanges = Partial<Omit<SubscriptionsTable, 'id' | 'account_id' | 'created_at'>>;

/** Associated data of the encrypted authorization: a ciphertext only opens in its own row. */
export const authorizationPurpose = (subscriptionId: string) => `subscription-authorization:${subscriptionId}`;

export function encryptAuthorization(box: SecretBox, subscriptionId: string, auth: CallbackAuthorization | null): string | null {
  return auth === null ? null : box.encrypt(JSON.stringify(auth), authorizationPurpose(subscriptionId));
}

/** A stored row with its authorization decrypted (secrets in plain text: never return it as is). */
export function rowToSubscription(row: SubscriptionsTable, box: SecretBox): Subscription {
  return {
    id: row.id,
    accountId: row.account_id,
    event: row.event as SubscriptionEvent,
    description: row.description,
    active: row.active === 1,
    experiences: JSON.parse(row.experiences) as string[],
    callback: {
      url: row.callback_url,
      authorization: row.callback_authorization_encrypted ? (JSON.parse(box.decrypt(row.callback_authorization_encrypted, authorizationPurpose(row.id))) as CallbackAuthorization) : null,
      customHeaders: JSON.parse(row.callback_custom_headers) as Record<string, string>,
    },
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    disabled: row.disabled_reason !== null ? { reason: row.disabled_reason, at: row.disabled_at ?? row.updated_at } : null,
    rateLimit: row.rate_limit,
  };
}

export function subscriptionToRow(subscription: Subscription, box: SecretBox): SubscriptionsTable {
  return {
    id: subscription.id,
    account_id: subscription.accountId,
    event: subscription.event,
    description: subscription.description,
    active: subscription.active ? 1 : 0,
    experiences: JSON.stringify(subscription.experiences),
    callback_url: subscription.callback.url,
    callback_authorization_encrypted: encryptAuthorization(box, subscription.id, subscription.callback.authorization),
    callback_custom_headers: JSON.stringify(subscription.callback.customHeaders),
    created_at: subscription.createdAt,
    updated_at: subscription.updatedAt,
    disabled_reason: subscription.disabled?.reason ?? null,
    disabled_at: subscription.disabled?.at ?? null,
    rate_limit: subscription.rateLimit,
  };
}

export interface SubscriptionRowFilter {
  event?: string;
  active?: boolean;
}

export async function insertSubscription(db: Executor, row: SubscriptionsTable): Promise<void> {
  await db.insertInto('subscriptions').values(row).execute();
}

/** The account's subscription, or undefined when it does not exist or belongs to another account. */
export async function findSubscription(db: Executor, accountId: string, id: string): Promise<SubscriptionRow | undefined> {
  return db.selectFrom('subscriptions').selectAll().where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst();
}

/** By id alone: for the delivery engine, which already knows the owner from the notification. */
export async function findSubscriptionById(db: Executor, id: string): Promise<SubscriptionRow | undefined> {
  return db.selectFrom('subscriptions').selectAll().where('id', '=', id).executeTakeFirst();
}

function listQuery(db: Db, accountId: string, active: boolean | undefined) {
  let query = db.selectFrom('subscriptions').selectAll().where('account_id', '=', accountId);
  if (active !== undefined) query = query.where('active', '=', active ? 1 : 0);
  return query.orderBy('created_at').orderBy('id');
}
const ACTIVE_FILTERS = [undefined, true, false] as const;
const listAll = new Map(ACTIVE_FILTERS.map((active) => [active, precompiled((db, accountId: string) => listQuery(db, accountId, active))]));
const listForEvent = new Map(ACTIVE_FILTERS.map((active) => [active, precompiled((db, accountId: string, event: string) => listQuery(db, accountId, active).where('event', '=', event))]));

/** The account's subscriptions, oldest first (ids sort by creation time); precompiled, a hot read. */
export async function listSubscriptionRows(db: Executor, accountId: string, filter: SubscriptionRowFilter = {}): Promise<SubscriptionRow[]> {
  return filter.event === undefined ? listAll.get(filter.active)!(db, accountId) : listForEvent.get(filter.active)!(db, accountId, filter.event);
}

export async function countSubscriptions(db: Executor, accountId: string): Promise<number> {
  const row = await db
    .selectFrom('subscriptions')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('account_id', '=', accountId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function updateSubscriptionRow(db: Executor, accountId: string, id: string, changes: SubscriptionRowChanges): Promise<boolean> {
  const result = await db.updateTable('subscriptions').set(changes).where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** Deletes the subscription; its signing secrets go with it (foreign key cascade). */
export async function deleteSubscriptionRow(db: Executor, accountId: string, id: string): Promise<boolean> {
  const result = await db.deleteFrom('subscriptions').where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/**
 * Serialises writers of one account's subscriptions inside a transaction (per-account limit,
 * secret rotation). PostgreSQL locks the account row; SQLite already runs one writer at a time.
 */
export async function lockAccountSubscriptions(db: Executor, accountId: string): Promise<void> {
  await dialectOf(db)
    .lockRows(db.selectFrom('accounts').select('id').where('id', '=', accountId))
    .execute();
}

/**
 * Inside a transaction: whether the account's subscription exists, locking its row on PostgreSQL so
 * it cannot be deleted before the transaction ends (SQLite already runs one writer at a time).
 */
export async function lockSubscription(db: Executor, accountId: string, id: string): Promise<boolean> {
  const query = db.selectFrom('subscriptions').select('id').where('account_id', '=', accountId).where('id', '=', id);
  return (await dialectOf(db).lockRows(query).executeTakeFirst()) !== undefined;
}

/** What routing needs to pick subscriptions for a notification (PRODUCT.md §7). */
export interface SubscriptionRoute {
  id: string;
  active: boolean;
  /** Experience names; empty = every experience. */
  experiences: string[];
  /** The callback URL now (written into the notification; each attempt reads the current one). */
  url: string;
}

/**
 * Every subscription of the account for one event (singular name), inactive ones included:
 * an inactive subscription naming an experience is how a client skips that experience.
 */
/**
 * The active subscriptions of any of `accountIds` to any of `events`, with their URLs: one statement
 * for a batch's operational notifications (services/operational-notifications.ts).
 */
export async function listActiveSubscriptionsOf(db: Executor, accountIds: readonly string[], events: readonly string[]): Promise<Array<{ id: string; accountId: string; event: string; url: string }>> {
  if (accountIds.length === 0 || events.length === 0) return [];
  const rows = await db
    .selectFrom('subscriptions')
    .select(['id', 'account_id', 'event', 'callback_url'])
    .where('account_id', 'in', [...accountIds])
    .where('event', 'in', [...events])
    .where('active', '=', 1)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.map((row) => ({ id: row.id, accountId: row.account_id, event: row.event, url: row.callback_url }));
}

export async function listSubscriptionsForEvent(db: Executor, accountId: string, event: string): Promise<SubscriptionRoute[]> {
  const rows = await db
    .selectFrom('subscriptions')
    .select(['id', 'active', 'experiences', 'callback_url'])
    .where('account_id', '=', accountId)
    .where('event', '=', event)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.map((row) => ({ id: row.id, active: row.active === 1, experiences: JSON.parse(row.experiences) as string[], url: row.callback_url }));
}
