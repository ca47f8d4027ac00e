import type { Executor } from '../database.js';
import type { WebhookSigningSecretsTable } from '../tables/index.js';

export type SigningSecretRow = WebhookSigningSecretsTable;

/** Whose secret: one subscription's, or the account default used for per-request callback URLs. */
export type SigningSecretOwner = { subscriptionId: string } | { accountId: string };

function whereOwner<Q extends { where: (...args: any[]) => any }>(query: Q, owner: SigningSecretOwner): Q {
  if ('subscriptionId' in owner) return query.where('subscription_id', '=', owner.subscriptionId);
  return query.where('account_id', '=', owner.accountId).where('subscription_id', 'is', null);
}

export async function insertSigningSecret(db: Executor, row: WebhookSigningSecretsTable): Promise<void> {
  await db.insertInto('webhook_signing_secrets').values(row).execute();
}

/** Inserts unless the owner already has a current secret (a concurrent first use); true if inserted. */
export async function insertSigningSecretIfNone(db: Executor, row: WebhookSigningSecretsTable): Promise<boolean> {
  const result = await db.insertInto('webhook_signing_secrets').values(row).onConflict((oc) => oc.doNothing()).executeTakeFirst();
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
