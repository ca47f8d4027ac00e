import type { Deps } from '../../deps.js';
import { newId } from '../../domain/ids.js';
import type { OutcomeRecorder, RequestOutcome } from '../../domain/requests/outcomes.js';
import { routeNotification, type NotificationEvent } from '../../domain/notifications/routing.js';
import type { Tx } from '../../storage/database.js';
import { signalJobsEnqueued } from '../../storage/queue/index.js';
import { insertNotifications, type NotificationRow } from '../../storage/repositories/notifications.js';
import { listSubscriptionsForEvent } from '../../storage/repositories/subscriptions.js';
import { enqueueDeliveries } from './schedule-delivery.js';

export function notificationEventOf(outcome: RequestOutcome): NotificationEvent {
  return outcome.kind === 'processed' ? 'processed-requests' : 'registered-requests';
}

/** Subscriptions store the singular event name the seed shows. */
const SUBSCRIPTION_EVENT: Record<NotificationEvent, string> = {
  'registered-requests': 'registered-request',
  'processed-requests': 'processed-request',
};

/**
 * The notification hook of the request pipeline: inside the transaction that registers, rejects
 * or processes a request, it routes the outcome and writes one notification and one delivery job
 * per target. Both commit with the state change or not at all (the transactional outbox).
 */
export function notificationRecorder(deps: Pick<Deps, 'clock' | 'db'>): OutcomeRecorder {
  return async (tx: Tx, outcome: RequestOutcome) => {
    const event = notificationEventOf(outcome);
    const request = outcome.request;
    const ownUrl = event === 'registered-requests' ? request.registeredCallbackUrl : request.processedCallbackUrl;
    const subscriptions = ownUrl ? [] : await listSubscriptionsForEvent(tx, request.accountId, SUBSCRIPTION_EVENT[event]);
    const targets = routeNotification(event, request, subscriptions);
    if (targets.length === 0) return;

    const now = deps.clock();
    const urls = new Map<string, string>();
    const subscriptionIds = targets.flatMap((t) => (t.kind === 'subscription' ? [t.subscriptionId] : []));
    if (subscriptionIds.length > 0) {
      const rows = await tx.selectFrom('subscriptions').select(['id', 'callback_url']).where('id', 'in', subscriptionIds).execute();
      for (const row of rows) urls.set(row.id, row.callback_url);
    }
    const payload = JSON.stringify(outcome.payload);
    const rows: NotificationRow[] = targets.map((target) => ({
      id: newId('msg', now),
      account_id: request.accountId,
      request_id: request.id,
      subscription_id: target.kind === 'subscription' ? target.subscriptionId : null,
      event,
      url: target.kind === 'subscription' ? (urls.get(target.subscriptionId) ?? '') : target.url,
      payload,
      status: 'pending',
      attempt_count: 0,
      next_attempt_at: now,
      last_status_code: null,
      last_error: null,
      created_at: now,
      updated_at: now,
      completed_at: null,
    }));
    await insertNotifications(tx, rows);
    await enqueueDeliveries(tx, rows.map((row) => row.id), { now });
    // Wake this process's delivery loop, which otherwise sleeps until its next poll (1 s): the
    // transactional job loop that runs this recorder signals nobody. Signalled before the commit,
    // the claim it triggers still sees these jobs on SQLite (one connection: the claim waits for
    // this transaction to finish); on PostgreSQL a claim may run first and find nothing, and the
    // NOTIFY sent on commit wakes the loop again.
    signalJobsEnqueued(deps.db);
  };
}
