import type { Prize } from '../../storage/repositories/experiences.js';
import { buildProcessingResult } from '../requests/items.js';
import type { ProcessedRequestsPayload, RegisteredRequestsPayload } from '../requests/outcomes.js';
import { iso } from '../time.js';

/** Header sent on every call of a test send, so a receiver can tell it from real traffic. */
export const TEST_SEND_HEADER = 'x-webhook-test';

const SAMPLE_PRIZES: Prize[] = [
  { id: 'test-prize-coupon', bucket: 'test-bucket', title: 'Test coupon', description: 'a sample prize', value: 10, quantity: 1, kind: 'coupon', stock: null },
  { id: 'test-prize-gift', bucket: 'test-bucket', title: 'Test gift', description: 'a sample prize', value: 5, quantity: 1, kind: 'physical', stock: 0 },
];

/**
 * The body of a test send: exactly the seed's shape for the event, built by the rules that build
 * real bodies, with ids that say they are samples (`req_test_…`, `TEST-COUPON-…`). A processed
 * sample has one delivered and one canceled prize, so a receiver sees both lists filled.
 */
export function sampleNotificationPayload(
  event: 'registered-requests' | 'processed-requests',
  requestId: string,
  now: number,
): RegisteredRequestsPayload | ProcessedRequestsPayload {
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
