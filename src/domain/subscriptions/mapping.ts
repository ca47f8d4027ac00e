import { maskAuthorization } from './authorization.js';
import type { RotatedSecret, SigningSecret } from './types.js';
import type { SubscriptionEvent } from '../notifications/events.js';
import type { CallbackAuthorization, Subscription } from './types.js';
import { iso } from '../time.js';

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
