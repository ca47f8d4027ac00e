import type { Executor } from '../storage/database.js';
import { notifyOtherProcesses } from '../storage/queue/index.js';
import { DELIVERIES, releaseRateLimited } from '../storage/deliveries.js';

/** A change that lets deliveries go sooner than the old limit scheduled them: removed, or raised. */
export function liftsRateLimit(before: number | null, after: number | null): boolean {
  return before !== null && (after === null || after > before);
}

/**
 * Inside the transaction of a subscription update that lifts its limit: its deliveries waiting
 * for their turn under the old limit are due now (each asks for a turn again, under the new
 * limit). Retries waiting for their retry time are not touched. Workers in other processes are
 * woken (PostgreSQL); this one's takes them at its next poll. Returns how many were moved.
 */
export async function releaseRateLimitedDeliveries(tx: Executor, subscriptionId: string, now: number): Promise<number> {
  // A subscription's rateLimit (docs/subscriptions.md, "Rate limit"): the worker postponed the
  // deliveries over the limit to the window where their turn falls and marked them `postponed`.
  const count = await releaseRateLimited(tx, subscriptionId, now);
  if (count > 0) await notifyOtherProcesses(tx, [DELIVERIES]);
  return count;
}
