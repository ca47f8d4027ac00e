import type { SecretBox } from '../domain/crypto/secret-box.js';
import type { Executor } from '../storage/database.js';
import { findSubscriptionById, rowToSubscription } from '../storage/repositories/subscriptions.js';
import type { SubscriptionEvent } from '../domain/notifications/events.js';
import type { CallbackAuthorization } from '../domain/subscriptions/types.js';

/**
 * What the delivery engine reads about subscriptions. Secrets come back in plain text: keep them
 * out of logs and notification records.
 */
export { loadSigningSecrets } from './signing-secrets.js';

export interface DeliveryTarget {
  subscriptionId: string;
  accountId: string;
  event: SubscriptionEvent;
  active: boolean;
  url: string;
  /** Plain secrets: Basic is base64 `user:password` and Bearer the token, both without the scheme. */
  authorization: CallbackAuthorization | null;
  customHeaders: Record<string, string>;
  /** Deliveries per second at most (rate-limiter.ts); null: no limit. */
  rateLimit: number | null;
}

/** The subscription's callback as it is now (each retry reads it again); undefined once deleted. */
export async function loadDeliveryTarget(db: Executor, box: SecretBox, subscriptionId: string): Promise<DeliveryTarget | undefined> {
  const row = await findSubscriptionById(db, subscriptionId);
  if (!row) return undefined;
  const subscription = rowToSubscription(row, box);
  return {
    subscriptionId: subscription.id,
    accountId: subscription.accountId,
    event: subscription.event,
    active: subscription.active,
    url: subscription.callback.url,
    authorization: subscription.callback.authorization,
    customHeaders: subscription.callback.customHeaders,
    rateLimit: subscription.rateLimit,
  };
}
