import type { DisabledSubscriptionsPayload, EndpointCircuitsPayload, FailedNotificationsPayload } from '../domain/notifications/payload-schemas.js';
import type { CircuitChangeFact } from './circuit-breakers.js';
import { isRequestEvent, NOTIFICATION_EVENT_OF, SUBSCRIPTION_EVENT_OF, type NotificationEvent, type OperationalNotificationEvent, type SubscriptionEvent } from '../domain/notifications/events.js';
import { iso } from '../domain/time.js';
import type { Executor } from '../storage/database.js';
import { notifyOtherProcesses } from '../storage/queue/index.js';
import { insertNotifications, newNotificationRow } from '../storage/repositories/notifications.js';
import { listActiveSubscriptionsOf } from '../storage/repositories/subscriptions.js';
import type { NotificationsTable } from '../storage/tables/index.js';
import { DELIVERIES } from '../storage/deliveries.js';

/** A notification that ended failed after its last attempt (or without one): what `failed-notifications` tells. */
export interface FailedNotification {
  accountId: string;
  notificationId: string;
  requestId: string;
  event: NotificationEvent;
  url: string;
  attempts: number;
  lastStatusCode: number | null;
  lastError: string | null;
  at: number;
}

/** A subscription the service switched off: what `disabled-subscriptions` tells. */
export interface SwitchedOffSubscription {
  accountId: string;
  subscriptionId: string;
  /** Its event as subscriptions name it (singular). */
  event: string;
  url: string;
  reason: string;
  at: number;
  failedPending: number;
}

/** Which notifications end in a `failed-notifications` one: real ones about requests, never a test send nor an operational one (no loops). */
export function reportsFailure(notification: { event: NotificationsTable['event']; test: boolean }): notification is { event: NotificationEvent; test: false } {
  return !notification.test && isRequestEvent(notification.event);
}

/**
 * Operational notifications (docs/delivery.md, "Operational notifications"), in the transaction
 * of the state change they tell (the transactional outbox, as for every notification): one per
 * active subscription of the account to the event. Called only when something failed or was
 * switched off, so a transaction where nothing did runs no statement here; otherwise one query
 * finds the subscriptions of every account concerned, one insert writes the notifications, and
 * other processes are woken. Answers how many were written (the caller wakes this process's worker
 * after its commit).
 *
 * A `disabled-subscriptions` or `endpoint-circuits` notification is about no request: its `request_id` is '' (the column
 * is NOT NULL; the delivery log shows null). A subscription switched off is inactive, so it never
 * gets its own.
 */
export async function writeOperationalNotifications(
  tx: Executor,
  facts: { failed: readonly FailedNotification[]; disabled: readonly SwitchedOffSubscription[]; circuits?: readonly CircuitChangeFact[] },
  now: number,
): Promise<number> {
  const { failed, disabled } = facts;
  const circuits = facts.circuits ?? [];
  if (failed.length === 0 && disabled.length === 0 && circuits.length === 0) return 0;
  const events = [
    ...(failed.length > 0 ? ['failed-notifications' as const] : []),
    ...(disabled.length > 0 ? ['disabled-subscriptions' as const] : []),
    ...(circuits.length > 0 ? ['endpoint-circuits' as const] : []),
  ];
  const accounts = [...new Set([...failed, ...disabled, ...circuits].map((fact) => fact.accountId))];
  const subscriptions = await listActiveSubscriptionsOf(
    tx,
    accounts,
    events.map((event) => SUBSCRIPTION_EVENT_OF[event]),
  );
  if (subscriptions.length === 0) return 0;
  const receiversOf = (accountId: string, event: OperationalNotificationEvent) =>
    subscriptions.filter((s) => s.accountId === accountId && NOTIFICATION_EVENT_OF[s.event as SubscriptionEvent] === event);
  const rows: NotificationsTable[] = [];
  const add = (accountId: string, requestId: string, event: OperationalNotificationEvent, payload: FailedNotificationsPayload | DisabledSubscriptionsPayload | EndpointCircuitsPayload) => {
    const body = JSON.stringify(payload);
    for (const subscription of receiversOf(accountId, event)) {
      rows.push(newNotificationRow({ accountId, requestId, subscriptionId: subscription.id, event, url: subscription.url, payload: body }, now));
    }
  };
  for (const f of failed) {
    add(f.accountId, f.requestId, 'failed-notifications', {
      notificationId: f.notificationId,
      requestId: f.requestId,
      event: f.event,
      url: f.url,
      attempts: f.attempts,
      lastStatusCode: f.lastStatusCode,
      lastError: f.lastError,
      failedAt: iso(f.at),
    });
  }
  for (const d of disabled) {
    add(d.accountId, '', 'disabled-subscriptions', {
      subscriptionId: d.subscriptionId,
      event: d.event,
      url: d.url,
      reason: d.reason,
      disabledAt: iso(d.at),
      failedPending: d.failedPending,
    });
  }
  for (const c of circuits) {
    add(c.accountId, '', 'endpoint-circuits', {
      url: c.url,
      state: c.state,
      changedAt: iso(c.at),
      failures: c.failures,
      lastFailure: c.lastFailure,
      nextProbeAt: c.nextProbeAt === null ? null : iso(c.nextProbeAt),
      held: c.held,
    });
  }
  if (rows.length === 0) return 0;
  await insertNotifications(tx, rows);
  await notifyOtherProcesses(tx, [DELIVERIES]);
  return rows.length;
}
