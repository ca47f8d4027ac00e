import {
  bucketOf,
  disabledReason,
  histogramQuantile,
  shouldDisable,
  STATS_WINDOWS,
  summarizeAttempts,
  type CountedAttempt,
  type StatsWindow,
} from '../domain/notifications/endpoint-health.js';
import { iso } from '../domain/time.js';
import type { Executor } from '../storage/database.js';
import { countPending, disableSubscription, findHealth, recordHealth, sumStats } from '../storage/repositories/subscription-health.js';
import { findSubscription } from '../storage/repositories/subscriptions.js';
import { releaseHeld } from './schedule-delivery.js';

/** A subscription the service switched off, for the log. */
export interface DisabledSubscription {
  subscriptionId: string;
  accountId: string;
  reason: string;
  failedPending: number;
}

/**
 * In the attempt log's transaction: adds the attempts that count (no test sends, no refusals) to
 * their subscriptions' rollup, and switches off those whose every attempt has failed for
 * SUBSCRIPTION_DISABLE_AFTER (`disableAfterMs`, 0 = never).
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
    await releaseHeld(tx, done.failedIds, options.now);
    disabled.push({ subscriptionId: run.subscriptionId, reason, accountId: done.accountId, failedPending: done.failedPending });
  }
  return disabled;
}

/** GET /subscriptions/{id}/stats (docs/subscriptions.md, "Endpoint health"). */
export interface EndpointStats {
  window: StatsWindow;
  /** Start of the oldest five-minute bucket counted: the window is aligned to the rollup. */
  since: string;
  attempts: { succeeded: number; retry: number; failed: number };
  successRate: number | null;
  latencyMs: { p50: number | null; p95: number | null };
  lastSuccess: { at: string; statusCode: number | null } | null;
  lastFailure: { at: string; statusCode: number | null; error: string | null } | null;
  consecutiveFailures: number;
  pending: number;
}

/** The subscription's health over `window`; undefined when it is not the account's. Reads the rollup, never the attempt log. */
export async function getEndpointStats(db: Executor, accountId: string, subscriptionId: string, window: StatsWindow, now: number): Promise<EndpointStats | undefined> {
  if (!(await findSubscription(db, accountId, subscriptionId))) return undefined;
  const since = bucketOf(now - STATS_WINDOWS[window]);
  const [totals, health, pending] = await Promise.all([sumStats(db, subscriptionId, since), findHealth(db, subscriptionId), countPending(db, subscriptionId)]);
  const attempts = totals.succeeded + totals.retry + totals.failed;
  return {
    window,
    since: iso(since),
    attempts: { succeeded: totals.succeeded, retry: totals.retry, failed: totals.failed },
    successRate: attempts === 0 ? null : Math.round((totals.succeeded / attempts) * 10_000) / 10_000,
    latencyMs: { p50: histogramQuantile(totals.histogram, 0.5), p95: histogramQuantile(totals.histogram, 0.95) },
    lastSuccess: health?.last_success_at != null ? { at: iso(health.last_success_at), statusCode: health.last_success_status } : null,
    lastFailure:
      health?.last_failure_at != null ? { at: iso(health.last_failure_at), statusCode: health.last_failure_status, error: health.last_failure_error } : null,
    consecutiveFailures: health?.consecutive_failures ?? 0,
    pending,
  };
}
