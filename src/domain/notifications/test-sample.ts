import type { Prize } from '../experiences/experience.js';
import { buildProcessingResult } from '../requests/items.js';
import type { ProcessedRequestsPayload, RegisteredRequestsPayload } from '../requests/outcomes.js';
import { iso } from '../time.js';
import type { DisabledSubscriptionsPayload, EndpointCircuitsPayload, FailedNotificationsPayload } from './payload-schemas.js';
import type { AnyNotificationEvent } from './events.js';

/** Header sent on every call of a test send, so a receiver can tell it from real traffic. */
export const TEST_SEND_HEADER = 'x-webhook-test';

const SAMPLE_PRIZES: Prize[] = [
  { id: 'test-prize-coupon', bucket: 'test-bucket', title: 'Test coupon', description: 'a sample prize', value: 10, quantity: 1, kind: 'coupon', stock: null },
  { id: 'test-prize-gift', bucket: 'test-bucket', title: 'Test gift', description: 'a sample prize', value: 5, quantity: 1, kind: 'physical', stock: 0 },
];

/**
 * The body of a test send: exactly the seed's shape for the event, built by the rules that build
 * real bodies, with ids that say they are samples (`req_test_…`, `TEST-COUPON-…`). A processed
 * sample has one delivered and one canceled prize, so a receiver sees both lists filled. An
 * operational sample names sample ids (nothing to retry, nothing to switch on).
 */
export function sampleNotificationPayload(
  event: AnyNotificationEvent,
  requestId: string,
  now: number,
): RegisteredRequestsPayload | ProcessedRequestsPayload | FailedNotificationsPayload | DisabledSubscriptionsPayload | EndpointCircuitsPayload {
  if (event === 'failed-notifications') {
    return {
      notificationId: `msg_test_${requestId.slice(-6)}`,
      requestId,
      event: 'processed-requests',
      url: 'https://receiver.example/test',
      attempts: 8,
      lastStatusCode: 503,
      lastError: 'callback answered HTTP 503',
      failedAt: iso(now),
    };
  }
  if (event === 'disabled-subscriptions') {
    return {
      subscriptionId: `sub_test_${requestId.slice(-6)}`,
      event: 'processed-request',
      url: 'https://receiver.example/test',
      reason: 'every delivery attempt failed for 5 days (since 2024-07-01T12:00:00.000Z); switched off automatically (SUBSCRIPTION_DISABLE_AFTER)',
      disabledAt: iso(now),
      failedPending: 3,
    };
  }
  if (event === 'endpoint-circuits') {
    return { url: 'https://receiver.example/test', state: 'open', changedAt: iso(now), failures: 5, lastFailure: 'connection refused by receiver.example', nextProbeAt: iso(now + 10_000), held: 0 };
  }
  const rewardValue = SAMPLE_PRIZES[0]!.value;
  if (event === 'registered-requests') return { id: requestId, rewardValue };
  const result = buildProcessingResult({
    requestId,
    event: 'test-event',
    experience: { id: 'test-experience', name: 'test-experience', title: 'Test experience', prizes: SAMPLE_PRIZES },
    allocations: ['taken', 'out-of-stock'],
    concludedAt: now,
    codes: { coupon: () => `TEST-COUPON-${requestId.slice(-6).toUpperCase()}`, paymentId: () => '' },
  });
  return { id: requestId, ...(result.rewardValue ? { rewardValue: result.rewardValue } : {}), concluded: iso(now), delivered: result.delivered, canceled: result.canceled };
}
