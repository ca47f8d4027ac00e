import type { NotificationAttemptRow, NotificationRow } from '../../storage/repositories/notifications.js';
import { iso } from '../time.js';

const isoOrNull = (ms: number | null) => (ms === null ? null : iso(ms));

/** A delivery-log entry as the API shows it. `id` is also the `webhook-id` header of every attempt. */
export function toNotificationResource(row: NotificationRow) {
  return {
    id: row.id,
    // '' on an operational notification about no request (disabled-subscriptions).
    requestId: row.request_id === '' ? null : row.request_id,
    subscriptionId: row.subscription_id,
    event: row.event,
    url: row.url,
    status: row.status,
    attemptCount: row.attempt_count,
    nextAttemptAt: isoOrNull(row.next_attempt_at),
    lastStatusCode: row.last_status_code,
    lastError: row.last_error,
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
    completedAt: isoOrNull(row.completed_at),
    payload: JSON.parse(row.payload) as Record<string, unknown>,
    test: row.test === 1,
    // Held behind the same request's registered-requests to the same URL (docs/delivery.md, "Order").
    ...(row.waits_for !== null && row.status === 'pending' ? { waitingFor: row.waits_for } : {}),
  };
}

export function toAttemptResource(row: NotificationAttemptRow) {
  return {
    attempt: row.attempt,
    at: iso(row.started_at),
    url: row.url,
    statusCode: row.status_code,
    latencyMs: row.latency_ms,
    responseBody: row.response_body,
    error: row.error,
    outcome: row.outcome,
    // Stored as compact JSON, secrets already masked; null: no call made, or logged before migration 019.
    requestHeaders: row.request_headers === null ? null : (JSON.parse(row.request_headers) as Record<string, string>),
    // As received, on any status (the retry policy honours it on 429 and 503); null: none, or logged before migration 022.
    retryAfter: row.retry_after,
  };
}
