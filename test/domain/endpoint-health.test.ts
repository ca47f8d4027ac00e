// needs: nothing
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  bucketOf,
  disabledReason,
  histogramQuantile,
  LATENCY_BOUNDS_MS,
  latencyBucket,
  shouldDisable,
  STATS_BUCKET_MS,
  STATS_RETENTION_MS,
  STATS_SERIES,
  STATS_WINDOWS,
  statsRange,
  summarizeAttempts,
  type CountedAttempt,
} from '../../src/domain/notifications/endpoint-health.js';

const attempt = (subscriptionId: string, at: number, outcome: CountedAttempt['outcome'], latencyMs = 3): CountedAttempt => ({
  subscriptionId,
  at,
  outcome,
  latencyMs,
  statusCode: outcome === 'succeeded' ? 200 : 500,
  error: outcome === 'succeeded' ? null : 'callback answered HTTP 500',
});

describe('endpoint health rollup (pure)', () => {
  it('puts latencies in 1-2-5 buckets, the last one open', () => {
    assert.equal(latencyBucket(0), 0);
    assert.equal(latencyBucket(1), 0);
    assert.equal(latencyBucket(1.5), 1);
    assert.equal(latencyBucket(30_000), LATENCY_BOUNDS_MS.length - 2);
    assert.equal(latencyBucket(120_000), LATENCY_BOUNDS_MS.length - 1);
  });

  it('estimates quantiles within the bucket that holds them; null without attempts', () => {
    const histogram = LATENCY_BOUNDS_MS.map(() => 0);
    assert.equal(histogramQuantile(histogram, 0.5), null);
    histogram[3] = 100; // 5–10 ms
    assert.equal(histogramQuantile(histogram, 0.5), 7.5);
    histogram[9] = 100; // 500–1000 ms
    assert.equal(histogramQuantile(histogram, 0.5), 10);
    assert.equal(histogramQuantile(histogram, 0.95), 950);
    const slow = LATENCY_BOUNDS_MS.map((_, i) => (i === LATENCY_BOUNDS_MS.length - 1 ? 1 : 0));
    assert.equal(histogramQuantile(slow, 0.5), 30_000, 'the open bucket answers its lower bound');
  });

  it('sums a batch per subscription and five-minute bucket, sorted, with the run of failures after the last success', () => {
    const t0 = 10 * STATS_BUCKET_MS;
    const { stats, health } = summarizeAttempts([
      attempt('sub_b', t0 + 1, 'retry'),
      attempt('sub_a', t0 + 5, 'retry', 700),
      attempt('sub_a', t0 + 2, 'succeeded'),
      attempt('sub_a', t0 + 1, 'failed'),
      attempt('sub_a', t0 + STATS_BUCKET_MS, 'failed'),
    ]);
    assert.deepEqual(
      stats.map((s) => [s.subscriptionId, s.bucketStart, s.succeeded, s.retry, s.failed]),
      [
        ['sub_a', t0, 1, 1, 1],
        ['sub_a', t0 + STATS_BUCKET_MS, 0, 0, 1],
        ['sub_b', t0, 0, 1, 0],
      ],
    );
    assert.equal(stats[0]!.histogram[latencyBucket(700)], 1);
    assert.deepEqual(health[0], {
      subscriptionId: 'sub_a',
      lastSuccess: { at: t0 + 2, statusCode: 200 },
      lastFailure: { at: t0 + STATS_BUCKET_MS, statusCode: 500, error: 'callback answered HTTP 500' },
      failuresAfterSuccess: 2,
      firstFailureAfterSuccess: t0 + 5,
    });
    assert.deepEqual(health[1]!.lastSuccess, null);
    assert.equal(health[1]!.failuresAfterSuccess, 1);
    assert.equal(bucketOf(t0 + STATS_BUCKET_MS - 1), t0);
  });

  it('a window is exactly its length, ends with the bucket in progress, and its series splits it in equal whole rollup buckets', () => {
    const now = Date.UTC(2026, 0, 15, 12, 7, 30);
    for (const window of ['1h', '24h', '7d'] as const) {
      const { since, until } = statsRange(window, now);
      assert.equal(until, Date.UTC(2026, 0, 15, 12, 10), window);
      assert.equal(until - since, STATS_WINDOWS[window]);
      assert.ok(until - STATS_RETENTION_MS <= since, 'the housekeeping keeps every bucket a window reads');
      const { buckets, bucketMs } = STATS_SERIES[window];
      assert.equal(buckets * bucketMs, STATS_WINDOWS[window], window);
      assert.equal(bucketMs % STATS_BUCKET_MS, 0, 'whole rollup buckets');
    }
    assert.deepEqual(Object.fromEntries(Object.entries(STATS_SERIES).map(([w, s]) => [w, s.buckets])), { '1h': 12, '24h': 24, '7d': 28 });
    // On a bucket's first millisecond, that bucket is the one in progress.
    assert.deepEqual(statsRange('1h', Date.UTC(2026, 0, 15, 12, 5)), { since: Date.UTC(2026, 0, 15, 11, 10), until: Date.UTC(2026, 0, 15, 12, 10) });
  });

  it('disables after SUBSCRIPTION_DISABLE_AFTER of failures only, and never with 0', () => {
    assert.equal(shouldDisable(1_000, 6_000, 5_000), true);
    assert.equal(shouldDisable(1_000, 5_999, 5_000), false);
    assert.equal(shouldDisable(null, 10_000, 5_000), false);
    assert.equal(shouldDisable(1_000, 10_000_000, 0), false);
    assert.match(disabledReason(0, 5 * 86_400_000), /^every delivery attempt failed for 5 days \(since 1970-01-01T00:00:00.000Z\)/);
    assert.match(disabledReason(0, 36 * 3_600_000), /failed for 1.5 days/);
    assert.match(disabledReason(0, 3000), /failed for 3 seconds/);
  });
});
