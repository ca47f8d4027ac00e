/**
 * The notification events: the one list. Every other place that names them derives from EVENTS:
 * routing (routing.ts), the subscription event and its accepted spellings
 * (subscriptions/validation.ts), the API's schemas (http/schemas/*, through event-schema.ts), and
 * through those the OpenAPI document and the console's generated types (console/src/api/schema.d.ts).
 *
 * Each event has two names: a notification carries the plural (its `x-webhook-event` header, the
 * delivery log), a subscription stores the singular (the seed's contract); input accepts either.
 * The singular is the plural without its final `s`: console/src/api/client.ts derives one from the
 * other, and test/domain/events.test.ts holds the rule.
 * `request` events are about a request and routed by it (PRODUCT.md §7); `operational` ones tell
 * the account about its own deliveries (services/operational-notifications.ts).
 *
 * Adding an event starts here, with a row. Then write what cannot be derived: its payload schema
 * (payload-schemas.ts) and the code that sends it, its entry in the OpenAPI `webhooks` map
 * (http/schemas/webhooks.ts; the type checker asks for it), its test-send sample (test-sample.ts),
 * and its docs (docs/notifications.md; docs/subscriptions.md, "Events").
 */
export const EVENTS = [
  { notification: 'registered-requests', subscription: 'registered-request', kind: 'request', description: 'a request was registered or rejected' },
  { notification: 'processed-requests', subscription: 'processed-request', kind: 'request', description: 'a request was processed into delivered and canceled prizes' },
  // An operational event's description is also the API's (http/schemas/subscription.ts).
  { notification: 'disabled-subscriptions', subscription: 'disabled-subscription', kind: 'operational', description: 'a subscription switched off' },
  { notification: 'failed-notifications', subscription: 'failed-notification', kind: 'operational', description: 'a notification failed after its last attempt' },
  { notification: 'endpoint-circuits', subscription: 'endpoint-circuit', kind: 'operational', description: "an endpoint's circuit breaker opened or closed" },
] as const satisfies readonly { notification: string; subscription: string; kind: 'request' | 'operational'; description: string }[];

type EventRow = (typeof EVENTS)[number];
type RequestRow = Extract<EventRow, { kind: 'request' }>;
type OperationalRow = Extract<EventRow, { kind: 'operational' }>;

/** A request event, as notifications name it (plural). */
export type NotificationEvent = RequestRow['notification'];
/** An operational event, as notifications name it: about the account's own deliveries, not routed by request. */
export type OperationalNotificationEvent = OperationalRow['notification'];
/** Every event a notification carries (its `x-webhook-event` header). */
export type AnyNotificationEvent = EventRow['notification'];
/** Every event as subscriptions store and return it (singular). */
export type SubscriptionEvent = EventRow['subscription'];
export type OperationalSubscriptionEvent = OperationalRow['subscription'];

const isRequestRow = (row: EventRow): row is RequestRow => row.kind === 'request';

/** Every notification event (plural), in the table's order. */
export const NOTIFICATION_EVENTS: readonly AnyNotificationEvent[] = EVENTS.map((row) => row.notification);
/** The request events (plural). */
export const REQUEST_EVENTS: readonly NotificationEvent[] = EVENTS.filter(isRequestRow).map((row) => row.notification);
/** Every subscription event (singular), in the table's order. */
export const SUBSCRIPTION_EVENTS: readonly SubscriptionEvent[] = EVENTS.map((row) => row.subscription);

/** Notification event (plural) → subscription event (singular), each key typed to its own value. */
export const SUBSCRIPTION_EVENT_OF = Object.fromEntries(EVENTS.map((row) => [row.notification, row.subscription])) as { readonly [R in EventRow as R['notification']]: R['subscription'] };
/** Subscription event (singular) → notification event (plural). */
export const NOTIFICATION_EVENT_OF = Object.fromEntries(EVENTS.map((row) => [row.subscription, row.notification])) as { readonly [R in EventRow as R['subscription']]: R['notification'] };

const REQUEST_NOTIFICATION_EVENTS: ReadonlySet<string> = new Set(REQUEST_EVENTS);
const OPERATIONAL_SUBSCRIPTION_EVENTS: ReadonlySet<string> = new Set(EVENTS.filter((row) => !isRequestRow(row)).map((row) => row.subscription));

/** A notification about a request, not an operational one. */
export const isRequestEvent = (event: AnyNotificationEvent): event is NotificationEvent => REQUEST_NOTIFICATION_EVENTS.has(event);
/** A subscription to an operational event: about the account's own deliveries, so it takes no experiences. */
export const isOperationalEvent = (event: SubscriptionEvent): event is OperationalSubscriptionEvent => OPERATIONAL_SUBSCRIPTION_EVENTS.has(event);

/**
 * The event names input accepts (a subscription's `event`, the `?event=` filter), each to the
 * singular it means: every event's singular and its plural, in the table's order.
 */
export const EVENT_ALIASES: ReadonlyMap<string, SubscriptionEvent> = new Map(
  EVENTS.flatMap((row): [string, SubscriptionEvent][] => [
    [row.subscription, row.subscription],
    [row.notification, row.subscription],
  ]),
);
