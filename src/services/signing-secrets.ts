import { randomBytes } from 'node:crypto';
import { parseDuration } from '../config.js';
import type { SecretBox } from '../domain/crypto/secret-box.js';
import { invalid } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import type { RotatedSecret, SigningSecret } from '../domain/subscriptions/types.js';
export type { RotatedSecret, SigningSecret };
import type { Db, Executor } from '../storage/database.js';

/** What the signing secret endpoints' use cases need: the database, the box that seals the secrets, the clock. */
export interface SigningSecretsContext {
  db: Db;
  box: SecretBox;
  clock: () => number;
}
import {
  deleteSubscriptionSecrets,
  insertSigningSecret,
  insertSigningSecretIfNone,
  listSubscriptionIdsAtUrl,
  listValidSecretsAtUrl,
  listValidSigningSecrets,
  retireSigningSecrets,
  type SigningSecretOwner,
  type SigningSecretRow,
} from '../storage/repositories/signing-secrets.js';
import { findSubscription, lockAccountSubscriptions, lockSubscription } from '../storage/repositories/subscriptions.js';

/**
 * Standard Webhooks signing secrets (`whsec_` + base64 of 32 random bytes). **One secret per
 * receiver URL** (docs/subscriptions.md, "Signing secrets"): the account's subscriptions at one
 * callback URL hold copies of one secret, so a receiver that takes both events at one URL verifies
 * every call with the one secret it configured. A per-request callback URL (`registeredCallbackUrl`,
 * `processedCallbackUrl`) is signed with the secret of the account's subscriptions at that exact
 * URL when there are any, otherwise with the account's default secret, created on first use.
 *
 * After a rotation the previous secret keeps signing for the overlap the caller chose (default
 * ROTATION_GRACE_MS), so receivers can switch without rejecting a notification (Standard Webhooks
 * sends one signature per valid secret); an overlap of 0 retires it at once (a leaked secret).
 */
export const ROTATION_GRACE_MS = 24 * 3_600_000;
/** The longest overlap a rotation may ask for: a week, as Stripe's dashboard offers. */
const ROTATION_MAX_OVERLAP_MS = 7 * 86_400_000;
const ROTATION_OVERLAP_MESSAGE = 'must be a duration from 0m (now) to 7d, like 1h or 3d';

/**
 * A rotation's `overlap` in the configuration's duration syntax (`0m`, `30m`, `1h`, `3d`): how long the
 * replaced secret keeps signing. Absent: ROTATION_GRACE_MS. `field` names it for the caller (`body.overlap`).
 */
export function parseRotationOverlap(overlap: string | undefined, field: string): number {
  if (overlap === undefined) return ROTATION_GRACE_MS;
  let ms: number;
  try {
    ms = parseDuration(overlap);
  } catch {
    throw invalid('request body', [{ path: field, message: ROTATION_OVERLAP_MESSAGE }]);
  }
  if (ms > ROTATION_MAX_OVERLAP_MS) throw invalid('request body', [{ path: field, message: ROTATION_OVERLAP_MESSAGE }]);
  return ms;
}

function generateWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

export const secretPurpose = (rowId: string) => `webhook-signing-secret:${rowId}`;

/** The owner as stored: a subscription belongs to an account; a default secret has no subscription. */
export interface SecretOwnerRef {
  accountId: string;
  subscriptionId: string | null;
}

function ownerFilter(owner: SecretOwnerRef): SigningSecretOwner {
  return owner.subscriptionId !== null ? { subscriptionId: owner.subscriptionId } : { accountId: owner.accountId };
}

function sealedRow(box: SecretBox, owner: SecretOwnerRef, secret: string, now: number): SigningSecretRow {
  const id = newId('whs', now);
  return {
    id,
    account_id: owner.accountId,
    subscription_id: owner.subscriptionId,
    secret_encrypted: box.encrypt(secret, secretPurpose(id)),
    created_at: now,
    expires_at: null,
  };
}

function open(box: SecretBox, row: SigningSecretRow): SigningSecret {
  return { secret: box.decrypt(row.secret_encrypted, secretPurpose(row.id)), createdAt: row.created_at, expiresAt: row.expires_at };
}

/**
 * Copies the secrets of the URL's oldest subscription with any (current and still in overlap) to
 * `subscriptionId`; false when no other subscription of the account at `url` has one. Subscriptions
 * written before secrets were shared may hold different ones at one URL: the oldest's is taken.
 */
async function adoptUrlSecrets(db: Executor, box: SecretBox, owner: { accountId: string; subscriptionId: string }, url: string, now: number): Promise<SigningSecret[] | undefined> {
  const rows = (await listValidSecretsAtUrl(db, owner.accountId, url, now)).filter((row) => row.subscription_id !== owner.subscriptionId);
  if (rows.length === 0) return undefined;
  const source = rows[0]!.subscription_id;
  const adopted: SigningSecret[] = [];
  for (const row of rows.filter((r) => r.subscription_id === source)) {
    const copy = open(box, row);
    const id = newId('whs', now);
    await insertSigningSecret(db, {
      id,
      account_id: owner.accountId,
      subscription_id: owner.subscriptionId,
      secret_encrypted: box.encrypt(copy.secret, secretPurpose(id)),
      created_at: row.created_at,
      expires_at: row.expires_at,
    });
    adopted.push(copy);
  }
  return adopted.sort((a, b) => Number(a.expiresAt !== null) - Number(b.expiresAt !== null));
}

/**
 * Gives a new subscription its secret: the one its URL already has (another subscription of the
 * account at the same URL), or a new one. Call inside the transaction that inserts it, under
 * lockAccountSubscriptions (two subscriptions created at once at a new URL share one too).
 */
export async function createSigningSecret(db: Executor, box: SecretBox, owner: { accountId: string; subscriptionId: string }, url: string, now: number): Promise<SigningSecret> {
  const adopted = await adoptUrlSecrets(db, box, owner, url, now);
  if (adopted) return adopted[0]!;
  const secret = generateWebhookSecret();
  await insertSigningSecret(db, sealedRow(box, owner, secret, now));
  return { secret, createdAt: now, expiresAt: null };
}

/**
 * A subscription moved to `url`: it takes the secret of the subscriptions already there, or keeps
 * its own when there are none (its receiver, moved with it, still verifies). Call in the
 * transaction that changes the URL, under lockAccountSubscriptions.
 */
export async function moveSigningSecret(db: Executor, box: SecretBox, owner: { accountId: string; subscriptionId: string }, url: string, now: number): Promise<void> {
  const others = (await listSubscriptionIdsAtUrl(db, owner.accountId, url)).filter((id) => id !== owner.subscriptionId);
  if (others.length === 0) return;
  await deleteSubscriptionSecrets(db, owner.subscriptionId);
  if (!(await adoptUrlSecrets(db, box, owner, url, now))) await insertSigningSecret(db, sealedRow(box, owner, generateWebhookSecret(), now));
}

/** Distinct secrets, current ones first (copies of one secret at one URL sign once). */
function distinct(secrets: SigningSecret[]): SigningSecret[] {
  const seen = new Set<string>();
  return secrets.sort((a, b) => Number(a.expiresAt !== null) - Number(b.expiresAt !== null)).filter((s) => !seen.has(s.secret) && seen.add(s.secret));
}

/**
 * The secrets that sign a call to a per-request callback URL: those of the account's subscriptions
 * at exactly that URL, or, when it has none, the account's default secret.
 */
export async function loadSigningSecretsForUrl(db: Executor, box: SecretBox, accountId: string, url: string, now = Date.now()): Promise<SigningSecret[]> {
  const rows = await listValidSecretsAtUrl(db, accountId, url, now);
  if (rows.length > 0) return distinct(rows.map((row) => open(box, row)));
  return loadSigningSecrets(db, box, { accountId }, now);
}

/** Every secret that may sign at `now`, current first. The account default is created on first use. */
export async function loadSigningSecrets(db: Executor, box: SecretBox, owner: { subscriptionId: string } | { accountId: string }, now = Date.now()): Promise<SigningSecret[]> {
  const rows = await listValidSigningSecrets(db, owner, now);
  if ('accountId' in owner && !rows.some((row) => row.expires_at === null)) {
    // Two first uses may race: the unique index keeps one current secret, the loser reads it.
    await insertSigningSecretIfNone(db, sealedRow(box, { accountId: owner.accountId, subscriptionId: null }, generateWebhookSecret(), now));
    return (await listValidSigningSecrets(db, owner, now)).map((row) => open(box, row));
  }
  return rows.map((row) => open(box, row));
}

/**
 * Replaces the current secret; the replaced one signs for `overlapMs` more (0: not at all, from
 * `now`). A subscription's secret is its URL's: every subscription of the account at that URL gets
 * the same new secret. Undefined when the subscription is not the account's (checked under the
 * same lock as the change).
 */
export async function rotateSigningSecret(db: Db, box: SecretBox, owner: SecretOwnerRef, now: number, overlapMs: number = ROTATION_GRACE_MS): Promise<RotatedSecret | undefined> {
  return db.transaction().execute(async (trx) => {
    await lockAccountSubscriptions(trx, owner.accountId);
    let owners: SecretOwnerRef[] = [owner];
    if (owner.subscriptionId !== null) {
      if (!(await lockSubscription(trx, owner.accountId, owner.subscriptionId))) return undefined;
      const subscription = (await findSubscription(trx, owner.accountId, owner.subscriptionId))!;
      owners = (await listSubscriptionIdsAtUrl(trx, owner.accountId, subscription.callback_url)).map((subscriptionId) => ({ accountId: owner.accountId, subscriptionId }));
    }
    const graceUntil = now + overlapMs;
    const secret = generateWebhookSecret();
    let replaced = false;
    for (const each of owners) {
      replaced ||= (await listValidSigningSecrets(trx, ownerFilter(each), now)).some((row) => row.expires_at === null);
      await retireSigningSecrets(trx, ownerFilter(each), now, graceUntil);
      await insertSigningSecret(trx, sealedRow(box, each, secret, now));
    }
    return { secret, createdAt: now, previousExpiresAt: replaced ? graceUntil : null };
  });
}
