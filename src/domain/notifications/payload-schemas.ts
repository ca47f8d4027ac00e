import { Type, type Static } from 'typebox';
import { eventSchema } from './event-schema.js';
import { REQUEST_EVENTS } from './events.js';

/**
 * The bodies of the two notifications, exactly the seed's tables, as JSON Schemas. The types the
 * payload builders return are derived from them (`Static`), and the OpenAPI document publishes
 * them under `webhooks` (http/schemas/webhooks.ts): what is sent and what is documented are one.
 * Objects are closed (`additionalProperties: false`), so a member added to a body without the
 * schema fails the test that validates real bodies against the published document. Each `title`
 * is the type's name in the OpenAPI document's components (http/openapi.ts).
 */

const closed = { additionalProperties: false } as const;
const DeliveryTimestamp = Type.String({ format: 'date-time' });

/** Delivered item: every member is always present; a string that does not apply is "". */
export const DeliveredItemSchema = Type.Object(
  {
    value: Type.Number(),
    quantity: Type.Number(),
    name: Type.String({ description: 'experience name' }),
    title: Type.String({ description: 'experience title' }),
    deliveryDetail: Type.Object(
      {
        timestamp: DeliveryTimestamp,
        info: Type.Object(
          {
            name: Type.Literal('delivered'),
            bucket: Type.String(),
            coupon: Type.String({ description: 'coupon code of a coupon prize, else ""' }),
            paymentId: Type.String({ description: 'payment id of a payment prize, else ""' }),
            requestId: Type.String(),
            triggerId: Type.String({ description: 'the request\'s event ("" when none)' }),
            rewardId: Type.String({ description: 'prize id' }),
            description: Type.String(),
          },
          closed,
        ),
        forwarded: Type.Boolean({ description: 'true for physical prizes, handed to a delivery partner' }),
      },
      closed,
    ),
  },
  { ...closed, title: 'DeliveredItem', description: 'a prize delivered' },
);

export const CanceledItemSchema = Type.Object(
  {
    value: Type.Number(),
    quantity: Type.Number(),
    priceless: Type.Boolean({ description: 'true when the prize has value 0' }),
    name: Type.String(),
    title: Type.String(),
    deliveryDetail: Type.Object(
      {
        timestamp: DeliveryTimestamp,
        info: Type.Object(
          {
            name: Type.Literal('canceled'),
            reason: Type.String(),
            reasonCode: Type.Integer({ description: '1 out of stock, 2 prize no longer offered, 3 account inactive (deactivated by the operator before processing)' }),
            description: Type.String(),
            paymentId: Type.String(),
          },
          closed,
        ),
        forwarded: Type.Boolean(),
      },
      closed,
    ),
  },
  { ...closed, title: 'CanceledItem', description: 'a prize canceled' },
);

/** `registered-requests`: `rewardValue` when registered with a reward; `errorCode` and `message` when rejected. */
export const RegisteredRequestsPayloadSchema = Type.Object(
  {
    id: Type.String({ description: 'the request id' }),
    rewardValue: Type.Optional(Type.Integer({ minimum: 1, description: 'Σ value × quantity of the prizes, when above zero' })),
    errorCode: Type.Optional(Type.String({ description: 'why the request was rejected' })),
    message: Type.Optional(Type.String()),
  },
  { ...closed, title: 'RegisteredRequestsPayload', description: 'the body of a `registered-requests` notification' },
);

/** `processed-requests`: what was delivered and what was canceled. */
export const ProcessedRequestsPayloadSchema = Type.Object(
  {
    id: Type.String({ description: 'the request id' }),
    rewardValue: Type.Optional(Type.Integer({ minimum: 1, description: 'over the delivered prizes, when above zero' })),
    concluded: Type.String({ format: 'date-time' }),
    delivered: Type.Array(DeliveredItemSchema),
    canceled: Type.Array(CanceledItemSchema),
  },
  { ...closed, title: 'ProcessedRequestsPayload', description: 'the body of a `processed-requests` notification' },
);

export type DeliveredItem = Static<typeof DeliveredItemSchema>;
export type CanceledItem = Static<typeof CanceledItemSchema>;
export type RegisteredRequestsPayload = Static<typeof RegisteredRequestsPayloadSchema>;
export type ProcessedRequestsPayload = Static<typeof ProcessedRequestsPayloadSchema>;

/**
 * `failed-notifications` (an operational event, services/operational-notifications.ts): a
 * notification ended failed after its last attempt, or without one. The ids let the receiver act on
 * it: GET /notifications/{notificationId}, POST /notifications/{notificationId}/retry, recovery.
 */
export const FailedNotificationsPayloadSchema = Type.Object(
  {
    notificationId: Type.String({ description: 'the failed notification (`msg_…`, its `webhook-id`): GET /notifications/{id} shows its attempts, POST /notifications/{id}/retry sends it again' }),
    requestId: Type.String({ description: 'the request the failed notification was about' }),
    event: eventSchema(REQUEST_EVENTS, { description: "the failed notification's event" }),
    url: Type.String({ description: 'the URL it was sent to' }),
    attempts: Type.Integer({ minimum: 0, description: 'attempts made (0 when it failed without one)' }),
    lastStatusCode: Type.Union([Type.Integer(), Type.Null()], { description: 'the HTTP status of the last answer; null when there was none (no answer, or no attempt)' }),
    lastError: Type.Union([Type.String(), Type.Null()], { description: 'why the last attempt failed, in words; null when the receiver answered and there is nothing to add' }),
    failedAt: Type.String({ format: 'date-time', description: 'when it ended failed (UTC)' }),
  },
  { ...closed, title: 'FailedNotificationsPayload', description: 'the body of a `failed-notifications` notification' },
);

/**
 * `disabled-subscriptions` (an operational event): the service switched a subscription off because
 * every attempt to its URL failed for SUBSCRIPTION_DISABLE_AFTER.
 */
export const DisabledSubscriptionsPayloadSchema = Type.Object(
  {
    subscriptionId: Type.String({ description: 'the subscription switched off (`sub_…`); PUT /subscriptions/{id} with `active: true` turns it on again' }),
    event: Type.String({ description: 'its event, singular as subscriptions name it (`registered-request`, …)' }),
    url: Type.String({ description: 'its callback URL' }),
    reason: Type.String({ description: 'why it was switched off, in words' }),
    disabledAt: Type.String({ format: 'date-time', description: 'when it was switched off (UTC)' }),
    failedPending: Type.Integer({
      minimum: 0,
      description: 'its pending notifications ended failed by the switch-off (no `failed-notifications` is sent for them); once it is on again, POST /subscriptions/{id}/recover sends them again',
    }),
  },
  { ...closed, title: 'DisabledSubscriptionsPayload', description: 'the body of a `disabled-subscriptions` notification' },
);

/**
 * `endpoint-circuits` (an operational event): an endpoint's circuit breaker opened (its new
 * notifications are held and probes test it) or closed (a probe or another attempt got an answer;
 * what it held goes out now). docs/delivery.md, "Circuit breaker".
 */
export const EndpointCircuitsPayloadSchema = Type.Object(
  {
    url: Type.String({ description: 'the endpoint: the callback URL whose circuit changed' }),
    state: Type.Union([Type.Literal('open'), Type.Literal('closed')], {
      description: '`open`: new notifications to the URL are held, no attempt made, and probes test it; `closed`: it answered again and what was held is being sent',
    }),
    changedAt: Type.String({ format: 'date-time', description: 'when it opened or closed (UTC)' }),
    failures: Type.Integer({ minimum: 0, description: 'open: the attempts in a row that got no answer or a 5xx; closed: 0' }),
    lastFailure: Type.Union([Type.String(), Type.Null()], { description: 'the latest of those failures, in words (`HTTP 503`, `connection refused by …`)' }),
    nextProbeAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'open: when the first probe may go; closed: null' }),
    held: Type.Integer({ minimum: 0, description: 'closed: the notifications it held, now being sent (oldest first, without using an attempt); open: 0' }),
  },
  { ...closed, title: 'EndpointCircuitsPayload', description: 'the body of an `endpoint-circuits` notification' },
);

export type FailedNotificationsPayload = Static<typeof FailedNotificationsPayloadSchema>;
export type EndpointCircuitsPayload = Static<typeof EndpointCircuitsPayloadSchema>;
export type DisabledSubscriptionsPayload = Static<typeof DisabledSubscriptionsPayloadSchema>;
