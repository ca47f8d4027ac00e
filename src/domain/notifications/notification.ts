import type { AttemptOutcomeKind } from './endpoint-health.js';
import type { AnyNotificationEvent } from './events.js';

/** Where a notification stands: `pending` until an attempt succeeds or the last one fails. */
export type NotificationStatus = 'pending' | 'succeeded' | 'failed';

/**
 * A delivery-log entry: one payload bound for one callback URL, as the domain sees it (the
 * notifications repository maps its rows to it; the delivery engine works on the rows).
 */
export interface Notification {
  /** `msg_…`: also the `webhook-id` of every attempt. */
  id: string;
  /** null on an operational notification about no request (disabled-subscriptions). */
  requestId: string | null;
  /** The subscription that routed it; null for a request's own callback URL. */
  subscriptionId: string | null;
  event: AnyNotificationEvent;
  url: string;
  /** The exact body sent, JSON text. */
  payload: string;
  status: NotificationStatus;
  attemptCount: number;
  /** When its next attempt is due (epoch ms); null: none scheduled, or one in flight. */
  nextAttemptAt: number | null;
  lastStatusCode: number | null;
  lastError: string | null;
  createdAt: number;
  updatedAt: number;
  completedAt: number | null;
  /** A test send. */
  test: boolean;
  /** A held `processed-requests`: the `registered-requests` it waits for. */
  waitsFor: string | null;
  /** When the endpoint's circuit breaker held it (docs/delivery.md, "Circuit breaker"); null: not held. */
  heldAt: number | null;
}

/** One attempt of a notification, as its delivery log records it. */
export interface DeliveryAttempt {
  notificationId: string;
  attempt: number;
  startedAt: number;
  url: string;
  statusCode: number | null;
  latencyMs: number;
  responseBody: string | null;
  error: string | null;
  outcome: AttemptOutcomeKind;
  /** The call's headers (lower-case name → value), secrets masked; null: no call made. */
  requestHeaders: Record<string, string> | null;
  /** The receiver's `Retry-After` as received; null: none. */
  retryAfter: string | null;
}
