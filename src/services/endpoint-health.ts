import {
  disabledReason,
  histogramQuantile,
  LATENCY_BOUNDS_MS,
  shouldDisable,
  STATS_SERIES,
  statsRange,
  summarizeAttempts,
  type CountedAttempt,
  type StatsWindow,
} from '../domain/notifications/endpoint-health.js';
import { iso } from '../domain/time.js';
import type { Executor } from '../storage/database.js';
import { readFromReplica, type ReplicaReads } from './replica-reads.js';
import { countNotifications } from '../storage/repositories/notifications.js';
import { releaseWaitingFor } from '../storage/deliveries.js';
import { disableSubscription, findHealth, recordHealth, sumStatsSeries, type StatsTotals } from '../storage/repositories/subscription-health.js';
import { findSubscription } from '../storage/repositories/subscriptions.js';
import { countHeld, findCircuit } from '../storage/repositories/endpoint-circuits.js';

/** A subscription the service switched off, for the log. */
export interface DisabledSubscription {
  subscriptionId: string;
  accountId: string;
  /** Its event (singular) and callback URL, for the `disabled-subscriptions` notification. */
  event: string;
  url: string;
  reason: string;
  at: number;
  failedPending: number;
}

/**
 * In the attempt log's transaction: adds the attempts that count (no test sends, no refusals) to
 * their subscriptions' rollup, and switches off those whose every attempt has failed for
 * SUBSCRIPTION_DISABLE_AFTER (`disableAfterMs`, 0 = never). The caller writes, in the same
 * transaction, the `disabled-subscriptions` notifications of those switched off
 * (operational-notifications.ts).
 */
export async function recordEndpointHealth(tx: Executor, attempts: readonly CountedAttempt[], options: { now: number; disableAfterMs: number }): Promise<DisabledSubscription[]> {
  if (attempts.length === 0) return [];
  const { stats, health } = summarizeAttempts(attempts);
  const runs = await recordHealth(tx, stats, health);
  const disabled: DisabledSubscription[] = [];
  for (const run of runs) {
    if (!shouldDisable(run.failingSince, options.now, options.disableAfterMs)) continue;
    const reason = disabledReason(run.failingSince!, options.disableAfterMs);
    const done = await disableSubscription(tx, run.subscriptionId, reason, options.now);
    if (!done) continue;
    // What waited for a notification failed here goes out now (docs/delivery.md, "Order").
    await releaseWaitingFor(tx, done.failedIds, options.now);
    disabled.push({ subscriptionId: run.subscriptionId, reason, accountId: done.accountId, event: done.event, url: done.url, at: options.now, failedPending: done.failedPending });
  }
  return disabled;
}

/** Attempts by outcome and what follows from them, for the window and for each bucket of its series. */
interface AttemptFigures {
  attempts: { succeeded: number; retry: number; failed: number };
  /** Per attempt: succeeded / all; null without attempts. */
  successRate: number | null;
  latencyMs: { p50: number | null; p95: number | null };
}

/** GET /subscriptions/{id}/stats (docs/subscriptions.md, "Endpoint health"). */
export interface EndpointStats extends AttemptFigures {
  window: StatsWindow;
  /** Start of the window, aligned to the rollup's five-minute buckets (statsRange). */
  since: string;
  /** The window in equal buckets, oldest first, every one present (STATS_SERIES); they add up to the window's figures. */
  series: Array<AttemptFigures & { start: string }>;
  lastSuccess: { at: string; statusCode: number | null } | null;
  lastFailure: { at: string; statusCode: number | null; error: string | null } | null;
  consecutiveFailures: number;
  /** Notifications of the subscription pending now: the rows of GET /notifications?subscriptionId=…&status=pending. */
  pending: number;
  /** Notifications of the subscription failed now: the rows of GET /notifications?subscriptionId=…&status=failed. */
  failed: number;
  /** The circuit breaker of its URL (docs/delivery.md, "Circuit breaker"). */
  circuit: {
    state: 'closed' | 'open' | 'draining';
    failures: number;
    lastFailure: string | null;
    openedAt: string | null;
    nextProbeAt: string | null;
    probes: number;
    held: number;
  };
}

const NO_ATTEMPTS: StatsTotals = { succeeded: 0, retry: 0, failed: 0, histogram: LATENCY_BOUNDS_MS.map(() => 0) };

function figures(totals: StatsTotals): AttemptFigures {
  const attempts = totals.succeeded + totals.retry + totals.failed;
  return {
    attempts: { succeeded: totals.succeeded, retry: totals.retry, failed: totals.failed },
    successRate: attempts === 0 ? null : Math.round((totals.succeeded / attempts) * 10_000) / 10_000,
    latencyMs: { p50: histogramQuantile(totals.histogram, 0.5), p95: histogramQuantile(totals.histogram, 0.95) },
  };
}

const add = (a: StatsTotals, b: StatsTotals): StatsTotals => ({
  succeeded: a.succeeded + b.succeeded,
  retry: a.retry + b.retry,
  failed: a.failed + b.failed,
  histogram: a.histogram.map((n, i) => n + b.histogram[i]!),
});

/**
 * The subscription's health over `window`; undefined when it is not the account's. The attempt
 * figures read the rollup, never the attempt log: the series' buckets are summed by the database
 * and the window's figures are their sum (the histograms added, then the percentiles taken), so
 * they cannot disagree. `pending` and `failed` count the delivery log with the list's own filter.
 */
export function getEndpointStats(reads: ReplicaReads, accountId: string, subscriptionId: string, window: StatsWindow, now: number): Promise<EndpointStats | undefined> {
  // From the replica when there is one; a subscription it does not have yet is looked for on the primary.
  return readFromReplica(
    reads,
    (db) => endpointStats(db, accountId, subscriptionId, window, now),
    (stats) => stats === undefined,
  );
}

async function endpointStats(db: Executor, accountId: string, subscriptionId: string, window: StatsWindow, now: number): Promise<EndpointStats | undefined> {
  const subscription = await findSubscription(db, accountId, subscriptionId);
  if (!subscription) return undefined;
  const endpoint = { accountId, url: subscription.callback_url };
  const { since, until } = statsRange(window, now);
  const { buckets, bucketMs } = STATS_SERIES[window];
  const ofSubscription = { accountId, subscriptionId };
  const [sums, health, pending, failed, circuit, held] = await Promise.all([
    sumStatsSeries(db, subscriptionId, { since, until, bucketMs }),
    findHealth(db, subscriptionId),
    countNotifications(db, { ...ofSubscription, status: 'pending' }),
    countNotifications(db, { ...ofSubscription, status: 'failed' }),
    findCircuit(db, endpoint),
    countHeld(db, endpoint),
  ]);
  const byIndex = new Map(sums.map((sum) => [sum.index, sum]));
  const totals = Array.from({ length: buckets }, (_, index) => byIndex.get(index) ?? NO_ATTEMPTS);
  return {
    window,
    since: iso(since),
    ...figures(totals.reduce(add, NO_ATTEMPTS)),
    series: totals.map((bucket, index) => ({ start: iso(since + index * bucketMs), ...figures(bucket) })),
    lastSuccess: health?.last_success_at != null ? { at: iso(health.last_success_at), statusCode: health.last_success_status } : null,
    lastFailure: health?.last_failure_at != null ? { at: iso(health.last_failure_at), statusCode: health.last_failure_status, error: health.last_failure_error } : null,
    consecutiveFailures: health?.consecutive_failures ?? 0,
    pending,
    failed,
    circuit: {
      state: circuit === undefined || circuit.state === 'failing' ? 'closed' : circuit.state,
      failures: circuit?.failures ?? 0,
      lastFailure: circuit?.reason ?? null,
      openedAt: circuit?.state === 'open' && circuit.openedAt !== null ? iso(circuit.openedAt) : null,
      nextProbeAt: circuit?.state === 'open' && circuit.nextProbeAt !== null ? iso(circuit.nextProbeAt) : null,
      probes: circuit?.state === 'open' ? circuit.probes : 0,
      held,
    },
  };
}
