import { conflict, invalid } from '../domain/errors.js';
import type { Db } from '../storage/database.js';
import { notifyOtherProcesses, type JobSignals } from '../storage/queue/index.js';
import { DELIVERIES, recoverFailed } from '../storage/deliveries.js';
import { findFailedPage, lockRecoveryOf } from '../storage/repositories/notification-recovery.js';
import { findSubscription } from '../storage/repositories/subscriptions.js';

/** The widest window one call may cover. */
const MAX_RECOVERY_WINDOW_MS = 30 * 24 * 3_600_000;

/** Notifications taken per transaction. */
export const RECOVERY_BATCH_SIZE = 1000;

/** The 409 of a switched-off subscription: its notifications are not sent, so recovered ones would fail again at once. */
export const RECOVER_SWITCHED_OFF = 'the subscription is switched off; switch it on, then recover';

export interface RecoveryContext {
  db: Db;
  signals: JobSignals;
  clock: () => number;
}

export interface RecoveryWindow {
  /** RFC 3339 date-time (the route's schema checked the format). */
  since: string;
  until?: string | undefined;
}

function instant(value: string, member: 'since' | 'until'): number {
  const at = Date.parse(value);
  // The schema's `date-time` format lets through what Date cannot represent (a leap second `…:60`).
  if (Number.isNaN(at)) throw invalid('request body', [{ path: `body.${member}`, message: 'must be a date-time (RFC 3339)' }]);
  return at;
}

/**
 * POST /subscriptions/{id}/recover: every notification of the subscription that ended `failed`
 * with `completed_at` in [since, until) gets one more attempt now, under its own id (the
 * `webhook-id`) and with its stored body. Test sends are left out. Answers how many were taken, or
 * undefined when the subscription is not the account's.
 *
 * - `until` defaults to now and is capped at the call's start: a notification a recovery sends
 *   that fails again is failed at a later time, outside this window, so this call never takes it twice.
 * - The failed notifications are read a page at a time by a keyset cursor on (completed_at, id),
 *   the order of the partial index that holds only failed rows; each page is taken in one short
 *   transaction: back to pending under a guard (still failed, still in the window), each due now
 *   as its own delivery (`recoverFailed`), other processes told.
 *   Memory holds one page of ids, never the whole set.
 * - Concurrent calls (overlapping windows, other processes): a notification is taken by exactly one
 *   of them, the one whose guarded UPDATE changes it first; the others skip it, and the count each
 *   answers is what it took. On PostgreSQL the page transactions of one subscription take turns
 *   (lockRecoveryOf): no waiting on each other's row locks, no deadlock.
 * - The page is read before its transaction opens: on SQLite the transaction then starts with its
 *   write, so it waits for the write lock (busy_timeout) instead of failing when another process
 *   committed after its read; the guard re-checks what the read saw.
 */
export async function recoverNotifications(ctx: RecoveryContext, accountId: string, subscriptionId: string, window: RecoveryWindow, options: { batchSize?: number } = {}): Promise<number | undefined> {
  const startedAt = ctx.clock();
  const since = instant(window.since, 'since');
  const requestedUntil = window.until === undefined ? startedAt : instant(window.until, 'until');
  if (since > requestedUntil) {
    throw invalid('request body', [{ path: 'body.since', message: window.until === undefined ? 'must not be in the future' : 'must not be after until' }]);
  }
  if (requestedUntil - since > MAX_RECOVERY_WINDOW_MS) {
    throw invalid('request body', [{ path: 'body.since', message: window.until === undefined ? 'must be at most 30 days ago' : 'must be at most 30 days before until' }]);
  }
  const subscription = await findSubscription(ctx.db, accountId, subscriptionId);
  if (!subscription) return undefined;
  // Its notifications would fail again at once without a call: say so instead of answering a count.
  if (subscription.active !== 1) {
    throw conflict(RECOVER_SWITCHED_OFF);
  }

  const until = Math.min(requestedUntil, startedAt);
  const batchSize = options.batchSize ?? RECOVERY_BATCH_SIZE;
  let after = { at: since, id: '' };
  let recovered = 0;
  for (;;) {
    const page = await findFailedPage(ctx.db, { subscriptionId, after, until, limit: batchSize });
    if (page.length === 0) break;
    const last = page[page.length - 1]!;
    after = { at: Number(last.completed_at), id: last.id };
    const now = ctx.clock();
    const taken = await ctx.db.transaction().execute(async (tx) => {
      await lockRecoveryOf(tx, subscriptionId);
      const ids = await recoverFailed(
        tx,
        page.map((row) => row.id),
        { since, until },
        now,
      );
      if (ids.length === 0) return ids;
      await notifyOtherProcesses(tx, [DELIVERIES]);
      return ids;
    });
    if (taken.length > 0) ctx.signals.enqueued([DELIVERIES]);
    recovered += taken.length;
    if (page.length < batchSize) break;
  }
  return recovered;
}
