import type { SubscriptionEvent } from '../notifications/events.js';

/**
 * The webhook subscription model (seed "Subscription", PRODUCT.md §5). Secrets inside
 * `authorization` are plain here; storage encrypts them and the API masks them.
 */

export interface OAuth2Credentials {
  client_id: string;
  client_secret: string;
  /** Token endpoint, called with the client credentials grant. */
  url: string;
  audience?: string;
}

/**
 * How the service authenticates to the callback. Basic holds base64 `user:password` and Bearer the
 * token, both without their scheme prefix. `mtls: {}` = mTLS only; `mtls.twoFactor.oauth2` = mTLS + OAuth2.
 */
export interface CallbackAuthorization {
  Basic?: string;
  Bearer?: string;
  oauth2?: OAuth2Credentials;
  mtls?: { twoFactor?: { oauth2?: OAuth2Credentials } };
}

interface CallbackConfig {
  url: string;
  authorization: CallbackAuthorization | null;
  customHeaders: Record<string, string>;
}

export interface Subscription {
  id: string;
  accountId: string;
  event: SubscriptionEvent;
  description: string;
  active: boolean;
  experiences: string[];
  callback: CallbackConfig;
  createdAt: number;
  updatedAt: number;
  /** Set when the service switched it off (auto-disable, docs/subscriptions.md); null otherwise. */
  disabled: { reason: string; at: number } | null;
  /** Deliveries per second at most, across every worker; null = no limit. */
  rateLimit: number | null;
}

/** A create or update body once its JSON shape is checked (http/schemas/subscription.ts). */
export interface SubscriptionBody {
  _id?: string;
  accountId?: string;
  createdAt?: string;
  updatedAt?: string;
  event?: string;
  description?: string;
  active?: boolean;
  experiences?: string[];
  callback?: CallbackBody;
  rateLimit?: number | null;
}

export interface CallbackBody {
  url: string;
  authorization?: CallbackAuthorization | null;
  customHeaders?: Record<string, string>;
}

/** The members a create or update sets, normalised; omitted members are undefined. */
export interface SubscriptionChanges {
  event?: SubscriptionEvent;
  description?: string;
  active?: boolean;
  experiences?: string[];
  /** authorization may still hold masked values, resolved against the stored secrets. */
  callback?: CallbackConfig;
  /** null removes the limit. */
  rateLimit?: number | null;
}

export type { FieldError } from '../errors.js';

export const LIMITS = {
  subscriptionsPerAccount: 100,
  experiences: 100,
  experienceNameLength: 200,
  descriptionLength: 500,
  customHeaders: 50,
  headerNameLength: 256,
  headerValueLength: 8192,
  secretLength: 8192,
  /** Deliveries per second a subscription may be limited to (rateLimit: 1 … this). */
  rateLimit: 10_000,
} as const;

export interface SigningSecret {
  /** `whsec_…` in plain text. */
  secret: string;
  createdAt: number;
  /** null for the current secret; set for the previous one during its grace period. */
  expiresAt: number | null;
}

export interface RotatedSecret {
  secret: string;
  createdAt: number;
  /** When the replaced secret stops signing, or null if there was none. */
  previousExpiresAt: number | null;
}
