import type { SecretBox } from '../crypto/secret-box.js';
import type { SubscriptionsTable } from '../../storage/tables/index.js';
import { maskAuthorization } from './authorization.js';
import type { RotatedSecret, SigningSecret } from './types.js';
import type { CallbackAuthorization, Subscription, SubscriptionEvent } from './types.js';
import { iso } from '../time.js';

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
      authorization: row.callback_authorization_encrypted
        ? (JSON.parse(box.decrypt(row.callback_authorization_encrypted, authorizationPurpose(row.id))) as CallbackAuthorization)
        : null,
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

/** The API representation (seed "Subscription"): secrets masked, times as ISO 8601 strings. */
export interface SubscriptionResource {
  _id: string;
  accountId: string;
  event: SubscriptionEvent;
  description: string;
  active: boolean;
  experiences: string[];
  callback: { url: string; authorization?: CallbackAuthorization; customHeaders: Record<string, string> };
  createdAt: string;
  updatedAt: string;
  rateLimit?: number;
  disabledReason?: string;
  disabledAt?: string;
}

export function toSubscriptionResource(subscription: Subscription): SubscriptionResource {
  const { url, authorization, customHeaders } = subscription.callback;
  return {
    _id: subscription.id,
    accountId: subscription.accountId,
    event: subscription.event,
    description: subscription.description,
    active: subscription.active,
    experiences: subscription.experiences,
    callback: { url, ...(authorization ? { authorization: maskAuthorization(authorization) } : {}), customHeaders },
    createdAt: iso(subscription.createdAt),
    updatedAt: iso(subscription.updatedAt),
    ...(subscription.rateLimit !== null ? { rateLimit: subscription.rateLimit } : {}),
    ...(subscription.disabled ? { disabledReason: subscription.disabled.reason, disabledAt: iso(subscription.disabled.at) } : {}),
  };
}

export interface SigningSecretResource {
  secret: string;
  createdAt: string;
  previousSecretExpiresAt?: string;
}

/** The current secret of an owner's valid secrets, and when the previous one stops signing. */
export function toSigningSecretResource(secrets: SigningSecret[]): SigningSecretResource {
  const current = secrets.find((s) => s.expiresAt === null);
  if (!current) throw new Error('no current signing secret');
  const previous = secrets.find((s) => s.expiresAt !== null);
  return {
    secret: current.secret,
    createdAt: iso(current.createdAt),
    ...(previous ? { previousSecretExpiresAt: iso(previous.expiresAt!) } : {}),
  };
}

export function toRotatedSecretResource(rotated: RotatedSecret): SigningSecretResource {
  return {
    secret: rotated.secret,
    createdAt: iso(rotated.createdAt),
    ...(rotated.previousExpiresAt !== null ? { previousSecretExpiresAt: iso(rotated.previousExpiresAt) } : {}),
  };
}
