import type { Executor } from '../database.js';
import { dialectOf } from '../dialect.js';
import type { WebhookSigningSecretsTable } from '../tables/index.js';

export type SigningSecretRow = WebhookSigningSecretsTable;

/** Whose secret: one subscription's, or the account default used for per-request callback URLs. */
export type SigningSecretOwner = { subscriptionId: string } | { accountId: string };

/** A select, update or delete of webhook_signing_secrets: each builder's `where` returns its own kind. */
interface OwnerFilterable<Q> {
  where(column: 'subscription_id' | 'account_id', operator: '=' | 'is', value: string | null): Q;
}

function whereOwner<Q extends OwnerFilterable<Q>>(query: Q, owner: SigningSecretOwner): Q {
  if ('subscriptionId' in owner) return query.where('subscription_id', '=', owner.subscriptionId);
  return query.where('account_id', '=', owner.accountId).where('subscription_id', 'is', null);
}

export async function insertSigningSecret(db: Executor, row: WebhookSigningSecretsTable): Promise<void> {
  await db.insertInto('webhook_signing_secrets').values(row).execute();
}

/** Inserts unless the owner already has a current secret (a concurrent first use); true if inserted. */
export async function insertSigningSecretIfNone(db: Executor, row: WebhookSigningSecretsTable): Promise<boolean> {
  const result = await db
    .insertInto('webhook_signing_secrets')
    .values(row)
    .onConflict((oc) => oc.doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0;
}

/** Every secret that may sign now: the current one first, then those still inside their grace period. */
export async function listValidSigningSecrets(db: Executor, owner: SigningSecretOwner, now: number): Promise<SigningSecretRow[]> {
  const query = db
    .selectFrom('webhook_signing_secrets')
    .selectAll()
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]));
  const rows: SigningSecretRow[] = await whereOwner(query, owner).orderBy('created_at', 'desc').orderBy('id', 'desc').execute();
  // The current secret first even when a rotation happened within the same millisecond.
  return rows.sort((a, b) => Number(a.expires_at !== null) - Number(b.expires_at !== null));
}

/**
 * Rotation, step one: the current secret keeps signing until `graceUntil`; secrets already in a
 * grace period stop now, so at most two secrets sign at once (the signature header stays short).
 * Expired rows are deleted. The caller inserts the new current secret in the same transaction.
 */
export async function retireSigningSecrets(db: Executor, owner: SigningSecretOwner, now: number, graceUntil: number): Promise<void> {
  await whereOwner(db.deleteFrom('webhook_signing_secrets').where('expires_at', '<=', now), owner).execute();
  await whereOwner(db.updateTable('webhook_signing_secrets').set({ expires_at: now }).where('expires_at', '>', now), owner).execute();
  await whereOwner(db.updateTable('webhook_signing_secrets').set({ expires_at: graceUntil }).where('expires_at', 'is', null), owner).execute();
}

/** A secret row with the subscription that holds it (its `created_at` orders the URL's subscriptions). */
export type UrlSecretRow = SigningSecretRow & { subscription_created_at: number };

/**
 * The secrets that may sign now of every subscription of the account at exactly `url`, the oldest
 * subscription's first and, within one, the current secret first. Subscriptions at one URL hold
 * copies of one secret (services/signing-secrets.ts); an account has at most 100 subscriptions.
 */
export async function listValidSecretsAtUrl(db: Executor, accountId: string, url: string, now: number): Promise<UrlSecretRow[]> {
  const rows = await db
    .selectFrom('webhook_signing_secrets as w')
    .innerJoin('subscriptions as s', 's.id', 'w.subscription_id')
    .selectAll('w')
    .select('s.created_at as subscription_created_at')
    .where('s.account_id', '=', accountId)
    .where('s.callback_url', '=', url)
    .where((eb) => eb.or([eb('w.expires_at', 'is', null), eb('w.expires_at', '>', now)]))
    .orderBy('s.created_at')
    .orderBy('s.id')
    .orderBy('w.created_at', 'desc')
    .orderBy('w.id', 'desc')
    .execute();
  return rows.map((row) => ({ ...row, subscription_created_at: Number(row.subscription_created_at) }));
}

/**
 * The ids of the account's subscriptions at exactly `url`, oldest first; on PostgreSQL their rows
 * are locked until the transaction ends, so none is deleted while its secrets are written.
 */
export async function listSubscriptionIdsAtUrl(db: Executor, accountId: string, url: string): Promise<string[]> {
  const query = db.selectFrom('subscriptions').select('id').where('account_id', '=', accountId).where('callback_url', '=', url).orderBy('created_at').orderBy('id');
  const rows = await dialectOf(db).lockRows(query).execute();
  return rows.map((row) => row.id);
}

/** Drops every secret of one subscription (it takes the secret of the URL it moves to). */
export async function deleteSubscriptionSecrets(db: Executor, subscriptionId: string): Promise<void> {
  await db.deleteFrom('webhook_signing_secrets').where('subscription_id', '=', subscriptionId).execute();
}
