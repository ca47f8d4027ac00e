import type { AttemptOutcomeKind } from '../../domain/notifications/endpoint-health.js';
import type { NotificationStatus } from '../../domain/notifications/notification.js';
import type { AnyNotificationEvent } from '../../domain/notifications/events.js';

/** One notification: a payload bound for one callback URL; its id is the Standard Webhooks `webhook-id`. */

export interface NotificationsTable {
  id: string;
  account_id: string;
  request_id: string;
  /** The subscription that routed it; null for a request's own callback URL. */
  subscription_id: string | null;
  /** A request event, or an operational one (`disabled-subscriptions`, `failed-notifications`: request_id '' for the first). */
  event: AnyNotificationEvent;
  /** The callback URL when the notification was written (a subscription's current URL is used at send time). */
  url: string;
  /** The exact body sent, JSON text. */
  payload: string;
  status: NotificationStatus;
  /** Attempts made so far. */
  attempt_count: number;
  last_status_code: number | null;
  last_error: string | null;
  created_at: number;
  updated_at: number;
  completed_at: number | null;
  /** 1 for a test send: one attempt, sent to an inactive subscription too, marked in the log and to the receiver. */
  test: number;
  /** A held `processed-requests`: the id of the same request's `registered-requests` to the same URL it waits for (not due meanwhile). */
  waits_for: string | null;
  /** 1 on a `registered-requests` notification that a processed one was held behind: ending it releases them. */
  has_waiters: number;
  /** When its next attempt is due; null once it ended, and while it is held (`waits_for`). The row is its own delivery (storage/deliveries.ts). */
  run_at: number | null;
  /** The token of the claim or hand-off that holds its delivery, and when that lease ends (worker/delivery-ownership.ts). */
  lease: string | null;
  lease_until: number | null;
  /** Runs of its delivery that ended without an outcome (DELIVERY_RUNS_WITHOUT_OUTCOME). */
  runs: number;
  /** 1 while its delivery waits for its turn under the subscription's rateLimit (lifting the limit finds it). */
  postponed: number;
  /** Attempts made by manual retries (POST /notifications/{id}/retry), which RETRY_MAX_ATTEMPTS does not count; null: none (migration 020). */
  manual_attempts: number | null;
  /**
   * Set by a manual retry until its attempt is settled (null: the attempt due is an automatic one):
   * when the delivery's automatic attempts resume should the manual one fail — when its next one was
   * due before the retry (the retry's own time for a held one) — or 0 when it had ended before the
   * retry (the manual attempt is its only one). Read only while the notification is pending.
   */
  manual_resume_at: number | null;
  /** When the endpoint's circuit breaker held it (not due, no attempt made: docs/delivery.md, "Circuit breaker"); null: not held (migration 025). */
  held_at: number | null;
  /**
   * With traces on, the W3C `traceparent` of the span that wrote it (its request's registration or
   * processing): each attempt's span is its child. Not written while traces are off (null; migration 026).
   */
  trace_parent?: string | null;
}

export interface NotificationAttemptsTable {
  notification_id: string;
  attempt: number;
  started_at: number;
  url: string;
  status_code: number | null;
  latency_ms: number;
  /** First 1 KiB of the response body. */
  response_body: string | null;
  error: string | null;
  /** 'succeeded', 'retry' (another attempt is scheduled) or 'failed' (no more attempts). */
  outcome: AttemptOutcomeKind;
  /**
   * The headers of the call the attempt made, as compact JSON (lower-case name → value), secrets
   * masked before they are stored (domain/notifications/request-headers.ts); null when it made no
   * call, and for attempts logged before migration 019.
   */
  request_headers: string | null;
  /**
   * The `Retry-After` header of the receiver's answer as received (its first 256 characters), on
   * any status: the retry policy honours it on 429 and 503 only. null when the answer had none, when
   * there was no answer, and for attempts logged before migration 022.
   */
  retry_after: string | null;
}
