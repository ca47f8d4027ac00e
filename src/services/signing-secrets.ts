import { randomBytes } from 'node:crypto';
import { parseDuration } from '../config.js';
import type { SecretBox } from '../domain/crypto/secret-box.js';
import { invalid } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import type { RotatedSecret, SigningSecret } from '../domain/subscriptions/types.js';
export type { RotatedSecret, SigningSecret };
import type { Db, Executor } from '../storage/database.js';
import {
  insertSigningSecret,
  insertSigningSecretIfNone,
  listValidSigningSecrets,
  retireSigningSecrets,
  type SigningSecretOwner,
  type SigningSecretRow,
} from '../storage/repositories/signing-secrets.js';
import { lockAccountSubscriptions, lockSubscription } from '../storage/repositories/subscriptions.js';

/**
 * Standard Webhooks signing secrets (`whsec_` + base64 of 32 random bytes). Every subscription
 * has one; every account has a default one for per-request callback URLs, created on first use.
 * After a rotation the previous secret keeps signing for the overlap the caller chose (default
 * ROTATION_GRACE_MS), so receivers can switch without rejecting a notification (Standard Webhooks
 * sends one signature per valid secret); an overlap of 0 retires it at once (a leaked secret).
 */
export const ROTATION_GRACE_MS = 24 * 3_600_000;
/** The longest overlap a rotation may ask for: a week, as Stripe's dashboard offers. */
export const ROTATION_MAX_OVERLAP_MS = 7 * 86_400_000;
export const ROTATION_OVERLAP_MESSAGE = 'must be a duration from 0m (now) to 7d, like 1h or 3d';

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

export function generateWebhookSecret(): string {
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

/** Gives a new subscription its first secret; call inside the transaction that inserts it. */
export async function createSigningSecret(db: Executor, box: SecretBox, owner: SecretOwnerRef, now: number): Promise<SigningSecret> {
  const secret = generateWebhookSecret();
  await insertSigningSecret(db, sealedRow(box, owner, secret, now));
  return { secret, createdAt: now, expiresAt: null };
}

/** Every secret that may sign at `now`, current first. The account default is created on first use. */
export async function loadSigningSecrets(
  db: Executor,
  box: SecretBox,
  owner: { subscriptionId: string } | { accountId: string },
  now = Date.now(),
): Promise<SigningSecret[]> {
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
 * `now`). Undefined when the subscription is not the account's (checked under the same lock as the change).
 */
export async function rotateSigningSecret(
  db: Db,
  box: SecretBox,
  owner: SecretOwnerRef,
  now: number,
  overlapMs: number = ROTATION_GRACE_MS,
): Promise<RotatedSecret | undefined> {
  return db.transaction().execute(async (trx) => {
    if (owner.subscriptionId !== null) {
      if (!(await lockSubscription(trx, owner.accountId, owner.subscriptionId))) return undefined;
    } else {
      await lockAccountSubscriptions(trx, owner.accountId);
    }
    const current = (await listValidSigningSecrets(trx, ownerFilter(owner), now)).find((row) => row.expires_at === null);
    const graceUntil = now + overlapMs;
    await retireSigningSecrets(trx, ownerFilter(owner), now, graceUntil);
    const secret = generateWebhookSecret();
    await insertSigningSecret(trx, sealedRow(box, owner, secret, now));
    return { secret, createdAt: now, previousExpiresAt: current ? graceUntil : null };
  });
}
