import type { DeliveryAttempt, Notification } from './notification.js';
import { iso } from '../time.js';
import { HELD_REASON } from './circuit-breaker.js';

const isoOrNull = (ms: number | null) => (ms === null ? null : iso(ms));

/** A delivery-log entry as the API shows it. `id` is also the `webhook-id` header of every attempt. */
export function toNotificationResource(notification: Notification) {
  return {
    id: notification.id,
    requestId: notification.requestId,
    subscriptionId: notification.subscriptionId,
    event: notification.event,
    url: notification.url,
    status: notification.status,
    attemptCount: notification.attemptCount,
    nextAttemptAt: isoOrNull(notification.nextAttemptAt),
    lastStatusCode: notification.lastStatusCode,
    lastError: notification.lastError,
    createdAt: iso(notification.createdAt),
    updatedAt: iso(notification.updatedAt),
    completedAt: isoOrNull(notification.completedAt),
    payload: JSON.parse(notification.payload) as Record<string, unknown>,
    test: notification.test,
    // Held behind the same request's registered-requests to the same URL (docs/delivery.md, "Order").
    ...(notification.waitsFor !== null && notification.status === 'pending' ? { waitingFor: notification.waitsFor } : {}),
    // Held by the endpoint's circuit breaker (docs/delivery.md, "Circuit breaker").
    ...(notification.heldAt !== null && notification.status === 'pending' ? { held: { since: iso(notification.heldAt), reason: HELD_REASON } } : {}),
  };
}

export function toAttemptResource(attempt: DeliveryAttempt) {
  return {
    attempt: attempt.attempt,
    at: iso(attempt.startedAt),
    url: attempt.url,
    statusCode: attempt.statusCode,
    latencyMs: attempt.latencyMs,
    responseBody: attempt.responseBody,
    error: attempt.error,
    outcome: attempt.outcome,
    // Secrets already masked; null: no call made, or logged before migration 019.
    requestHeaders: attempt.requestHeaders,
    // As received, on any status (the retry policy honours it on 429 and 503); null: none, or logged before migration 022.
    retryAfter: attempt.retryAfter,
  };
}
