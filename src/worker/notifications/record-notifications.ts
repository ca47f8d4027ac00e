import { orderKey } from '../../domain/notifications/order.js';
import type { RequestOutcome } from '../../domain/requests/outcomes.js';
import type { OutcomeRecorder } from '../outcome-recorder.js';
import { SUBSCRIPTION_EVENT_OF, type NotificationEvent } from '../../domain/notifications/events.js';
import { routeNotification } from '../../domain/notifications/routing.js';
import type { Tx } from '../../storage/database.js';
import type { NotificationsTable } from '../../storage/tables/index.js';
import { findPendingRegistered, insertNotifications, markHasWaiters, newNotificationRow } from '../../storage/repositories/notifications.js';
import { listSubscriptionsForEvent, type SubscriptionRoute } from '../../storage/repositories/subscriptions.js';
import { applyHandOff } from '../../storage/deliveries.js';

/** What the outcome recorders (this one and listen-copies.ts) use. */
export interface OutcomeRecorderDeps {
  clock: () => number;
}

export function notificationEventOf(outcome: RequestOutcome): NotificationEvent {
  return outcome.kind === 'processed' ? 'processed-requests' : 'registered-requests';
}

/**
 * The worker registers or processes up to 256 requests in one transaction, usually of few
 * accounts: subscriptions are read once per (batch, account, event), not once per request, with
 * their URLs in the same statement. On PostgreSQL each read is a round trip that waits behind
 * HTTP traffic: with a read per request, processing fell far behind ingest under load.
 */
function subscriptionReader(tx: Tx): (accountId: string, event: NotificationEvent) => Promise<SubscriptionRoute[]> {
  const read = new Map<string, Promise<SubscriptionRoute[]>>();
  return (accountId, event) => {
    const key = `${accountId}\u0000${event}`;
    let found = read.get(key);
    if (!found) read.set(key, (found = listSubscriptionsForEvent(tx, accountId, SUBSCRIPTION_EVENT_OF[event])));
    return found;
  };
}

/**
 * The notification hook of the request pipeline: inside the transaction that registers, rejects
 * or processes a batch of requests, it routes each outcome and writes one notification per target
 * (each its own delivery), with one multi-row insert. Both commit with the state change or not at
 * all (the transactional outbox). The deliveries go to the batch's hand-off: this worker starts
 * what it took right after the commit, and wakes the others for the rest.
 */
export function notificationRecorder(deps: OutcomeRecorderDeps): OutcomeRecorder {
  return async (tx: Tx, outcomes: RequestOutcome[], batch) => {
    const now = deps.clock();
    const subscriptionsFor = subscriptionReader(tx);
    const trace = batch?.trace;
    const rows = [];
    for (const outcome of outcomes) {
      const event = notificationEventOf(outcome);
      const request = outcome.request;
      const ownUrl = event === 'registered-requests' ? request.registeredCallbackUrl : request.processedCallbackUrl;
      const subscriptions = ownUrl ? [] : await subscriptionsFor(request.accountId, event);
      const targets = routeNotification(event, request, subscriptions);
      if (targets.length === 0) continue;
      const urlOf = new Map(subscriptions.map((s) => [s.id, s.url]));
      const payload = JSON.stringify(outcome.payload);
      const traceParent = trace ? trace.traceParentOf(request.id) : undefined;
      for (const target of targets) {
        rows.push(
          newNotificationRow(
            {
              accountId: request.accountId,
              requestId: request.id,
              subscriptionId: target.kind === 'subscription' ? target.subscriptionId : null,
              event,
              url: target.kind === 'subscription' ? (urlOf.get(target.subscriptionId) ?? '') : target.url,
              payload,
              traceParent,
            },
            now,
          ),
        );
      }
    }
    await holdBehindRegistered(tx, rows);
    // Each row is its own delivery, due now unless held; those the batch's worker has room for are leased to it.
    await insertNotifications(tx, applyHandOff(rows, batch?.handOff, now));
  };
}

/**
 * Notification order (docs/delivery.md, "Order"): a `processed-requests` notification whose
 * request's `registered-requests` to the same receiver (`orderKey`: the URL's origin) has not
 * ended yet (still pending, in the database or in this batch) is written held: `waits_for` names
 * that notification and it is not due (`run_at` null); the transaction that ends the registered one
 * releases it. URLs are compared as the notifications were written (a subscription's URL edited
 * in between does not count). One statement per batch, and only for batches with processed notifications; one more when it holds
 * some behind registered notifications already written (their `has_waiters` flag).
 */
async function holdBehindRegistered(tx: Tx, rows: NotificationsTable[]): Promise<void> {
  const processed = rows.filter((row) => row.event === 'processed-requests');
  if (processed.length === 0) return;
  const key = (row: NotificationsTable) => orderKey(row.request_id, row.url);
  const inBatch = new Map<string, string>();
  for (const row of rows) if (row.event === 'registered-requests' && !inBatch.has(key(row))) inBatch.set(key(row), row.id);
  const pending = await findPendingRegistered(
    tx,
    processed.map((row) => ({ requestId: row.request_id, url: row.url })),
  );
  for (const row of processed) {
    row.waits_for = pending.get(key(row)) ?? inBatch.get(key(row)) ?? null;
    // Held: not due until the notification it waits for ends.
    if (row.waits_for !== null) row.run_at = null;
  }
  // The registered notifications waited for are flagged, so that the statement ending them says so.
  const waitedFor = new Set(processed.flatMap((row) => (row.waits_for === null ? [] : [row.waits_for])));
  for (const row of rows) if (waitedFor.delete(row.id)) row.has_waiters = 1;
  await markHasWaiters(tx, [...waitedFor]);
}
