/**
 * Endpoint health (GET /subscriptions/{id}/stats, auto-disable): what the attempt log writer
 * adds to a subscription's rollup for a batch of attempts, and how a window of that rollup
 * becomes the answer. Pure: the subscription-health repository writes and reads it.
 */

/** The rollup's resolution: a window of `1h` covers the last 55 to 60 minutes (`statsRange`). */
export const STATS_BUCKET_MS = 5 * 60_000;

/** Upper bounds (ms) of the latency histogram's buckets; the last one is open. Same order as the le_N columns. */
export const LATENCY_BOUNDS_MS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 30_000, Infinity] as const;

export const STATS_WINDOWS = { '1h': 3_600_000, '24h': 86_400_000, '7d': 7 * 86_400_000 } as const;
export type StatsWindow = keyof typeof STATS_WINDOWS;
export const isStatsWindow = (value: string): value is StatsWindow => Object.hasOwn(STATS_WINDOWS, value);

/** Rollup buckets older than the longest window are of no use: the housekeeping deletes them. */
export const STATS_RETENTION_MS = STATS_WINDOWS['7d'] + STATS_BUCKET_MS;

export type AttemptOutcomeKind = 'succeeded' | 'retry' | 'failed';

/** One attempt that counts toward its subscription's health (not a test send, not a refusal). */
export interface CountedAttempt {
  subscriptionId: string;
  at: number;
  outcome: AttemptOutcomeKind;
  latencyMs: number;
  statusCode: number | null;
  error: string | null;
}

export const bucketOf = (at: number) => at - (at % STATS_BUCKET_MS);

/**
 * A window as a time series: its equal buckets, oldest first, each the sum of whole rollup buckets
 * (12 × 5 minutes for `1h`, 24 × 1 hour for `24h`, 28 × 6 hours for `7d`).
 */
export const STATS_SERIES: Record<StatsWindow, { buckets: number; bucketMs: number }> = {
  '1h': { buckets: 12, bucketMs: STATS_BUCKET_MS },
  '24h': { buckets: 24, bucketMs: 3_600_000 },
  '7d': { buckets: 28, bucketMs: 6 * 3_600_000 },
};

/**
 * The rollup buckets a window counts, [since, until): exactly the window's length, ending with the
 * five-minute bucket in progress at `now`. So `1h` covers the last 55 to 60 minutes, and every
 * bucket of its series starts on the rollup's grid.
 */
export function statsRange(window: StatsWindow, now: number): { since: number; until: number } {
  const until = bucketOf(now) + STATS_BUCKET_MS;
  return { since: until - STATS_WINDOWS[window], until };
}

export function latencyBucket(latencyMs: number): number {
  return LATENCY_BOUNDS_MS.findIndex((bound) => latencyMs <= bound);
}

/** A batch's addition to one (subscription, bucket) row. */
export interface StatsIncrement {
  subscriptionId: string;
  bucketStart: number;
  succeeded: number;
  retry: number;
  failed: number;
  histogram: number[];
}

/** What a batch says about one subscription's run of failures, merged into its health row. */
export interface HealthChange {
  subscriptionId: string;
  lastSuccess: { at: number; statusCode: number | null } | null;
  lastFailure: { at: number; statusCode: number | null; error: string | null } | null;
  /** Failed attempts after the batch's last success (all of them when it has none). */
  failuresAfterSuccess: number;
  /** The first of those (null when there are none). */
  firstFailureAfterSuccess: number | null;
}

/** Sorted by subscription, then bucket: writers lock rollup rows in one order, so they cannot deadlock. */
export function summarizeAttempts(attempts: readonly CountedAttempt[]): { stats: StatsIncrement[]; health: HealthChange[] } {
  const stats = new Map<string, StatsIncrement>();
  const bySubscription = new Map<string, CountedAttempt[]>();
  for (const attempt of attempts) {
    const bucketStart = bucketOf(attempt.at);
    const key = `${attempt.subscriptionId}\u0000${bucketStart}`;
    let row = stats.get(key);
    if (!row) {
      row = { subscriptionId: attempt.subscriptionId, bucketStart, succeeded: 0, retry: 0, failed: 0, histogram: LATENCY_BOUNDS_MS.map(() => 0) };
      stats.set(key, row);
    }
    row[attempt.outcome] += 1;
    row.histogram[latencyBucket(attempt.latencyMs)]! += 1;
    bySubscription.set(attempt.subscriptionId, [...(bySubscription.get(attempt.subscriptionId) ?? []), attempt]);
  }
  const health = [...bySubscription].map(([subscriptionId, list]): HealthChange => {
    const ordered = [...list].sort((a, b) => a.at - b.at);
    let lastSuccessIndex = ordered.length - 1;
    while (lastSuccessIndex >= 0 && ordered[lastSuccessIndex]!.outcome !== 'succeeded') lastSuccessIndex -= 1;
    const success = ordered[lastSuccessIndex];
    const failures = ordered.filter((a) => a.outcome !== 'succeeded');
    const lastFailure = failures.at(-1);
    const after = ordered.slice(lastSuccessIndex + 1);
    return {
      subscriptionId,
      lastSuccess: success ? { at: success.at, statusCode: success.statusCode } : null,
      lastFailure: lastFailure ? { at: lastFailure.at, statusCode: lastFailure.statusCode, error: lastFailure.error } : null,
      failuresAfterSuccess: after.length,
      firstFailureAfterSuccess: after[0]?.at ?? null,
    };
  });
  const order = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  return {
    stats: [...stats.values()].sort((a, b) => order(a.subscriptionId, b.subscriptionId) || a.bucketStart - b.bucketStart),
    health: health.sort((a, b) => order(a.subscriptionId, b.subscriptionId)),
  };
}

/**
 * The latency below which a fraction `q` of the attempts fall, estimated from the histogram: linear
 * within the bucket that holds it (exact to that bucket's width); null without attempts.
 */
export function histogramQuantile(histogram: readonly number[], q: number): number | null {
  const total = histogram.reduce((sum, n) => sum + n, 0);
  if (total === 0) return null;
  const rank = q * total;
  let below = 0;
  for (const [index, count] of histogram.entries()) {
    if (count > 0 && below + count >= rank) {
      const lower = index === 0 ? 0 : LATENCY_BOUNDS_MS[index - 1]!;
      const upper = LATENCY_BOUNDS_MS[index]!;
      if (upper === Infinity) return lower;
      return Math.round((lower + ((rank - below) / count) * (upper - lower)) * 10) / 10;
    }
    below += count;
  }
  return LATENCY_BOUNDS_MS.at(-2)!;
}

/** True when every attempt since `failingSince` failed and that has lasted `disableAfterMs` (0 = never). */
export function shouldDisable(failingSince: number | null, now: number, disableAfterMs: number): boolean {
  return disableAfterMs > 0 && failingSince !== null && now - failingSince >= disableAfterMs;
}

export function disabledReason(failingSince: number, disableAfterMs: number): string {
  return `every delivery attempt failed for ${humanDuration(disableAfterMs)} (since ${new Date(failingSince).toISOString()}); switched off automatically (SUBSCRIPTION_DISABLE_AFTER)`;
}

function humanDuration(ms: number): string {
  const units: Array<[string, number]> = [
    ['day', 86_400_000],
    ['hour', 3_600_000],
    ['minute', 60_000],
    ['second', 1000],
  ];
  const [name, size] = units.find(([, size]) => ms >= size) ?? ['millisecond', 1];
  const count = Math.round((ms / size) * 10) / 10;
  return `${count} ${name}${count === 1 ? '' : 's'}`;
}
