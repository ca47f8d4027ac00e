import { Type } from 'typebox';
import { eventSchema } from '../../domain/notifications/event-schema.js';
import { NOTIFICATION_EVENTS } from '../../domain/notifications/events.js';
import { CreatedRangeQueryProperties } from './paging.js';
import { SAMPLE_DELIVERED_NOTIFICATION, SAMPLE_NOTIFICATION, SAMPLE_RETRYING_NOTIFICATION } from './samples.js';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);

const NotificationStatusSchema = Type.Union([Type.Literal('pending'), Type.Literal('succeeded'), Type.Literal('failed')]);

export const NotificationSchema = Type.Object(
  {
    id: Type.String({ description: 'also the webhook-id header of every attempt' }),
    requestId: Nullable(
      Type.String({
        description: "the request the notification is about; for `failed-notifications`, the failed notification's request; null for `disabled-subscriptions`, which is about no request",
      }),
    ),
    subscriptionId: Nullable(Type.String()),
    event: Type.String(),
    url: Type.String(),
    status: NotificationStatusSchema,
    attemptCount: Type.Integer(),
    nextAttemptAt: Nullable(
      Type.String({
        format: 'date-time',
        description:
          "when the next attempt is due, as the worker scheduled it: RETRY_INTERVAL ± 20 % after a failed attempt, or later when a 429 or 503 answered a longer `Retry-After` (see the attempt's `retryAfter`); now after a manual retry; the rate limit's turn when the subscription's `rateLimit` postponed it. null when none is scheduled: delivered (`succeeded`), `failed` (its last attempt failed, or its subscription was switched off or deleted), held (`waitingFor`, `held`), and while an attempt is being made",
        examples: ['2024-07-01T12:17:00.000Z'],
      }),
    ),
    lastStatusCode: Nullable(Type.Integer()),
    lastError: Nullable(Type.String()),
    createdAt: Type.String({ format: 'date-time' }),
    updatedAt: Type.String({ format: 'date-time' }),
    completedAt: Nullable(Type.String({ format: 'date-time' })),
    payload: Type.Object({}, { additionalProperties: true }),
    test: Type.Boolean({ description: 'a test send (POST /subscriptions/{id}/test): sample body, one attempt, `x-webhook-test: true` to the receiver' }),
    waitingFor: Type.Optional(
      Type.String({
        description:
          "a held processed-requests notification: the id of the same request's registered-requests notification to the same URL it waits for; it is sent once that one has ended (delivered, or failed after its last attempt). No nextAttemptAt meanwhile",
      }),
    ),
    held: Type.Optional(
      Type.Object(
        {
          since: Type.String({ format: 'date-time', description: 'when the breaker held it' }),
          reason: Type.String({ description: 'why, in words' }),
        },
        {
          description:
            'a pending notification the endpoint\'s circuit breaker holds (docs/delivery.md, "Circuit breaker"): its URL failed CIRCUIT_BREAKER_FAILURES attempts in a row, so no attempt is made (none is used) until a probe gets an answer; then it is sent, oldest first. No nextAttemptAt meanwhile. The circuit itself (open since, next probe): GET /subscriptions/{id}/stats, `circuit`',
        },
      ),
    ),
  },
  { title: 'Notification', examples: [SAMPLE_NOTIFICATION] },
);

const NotificationAttemptSchema = Type.Object(
  {
    attempt: Type.Integer(),
    at: Type.String({ format: 'date-time' }),
    url: Type.String(),
    statusCode: Nullable(Type.Integer()),
    latencyMs: Type.Integer(),
    responseBody: Nullable(Type.String({ description: 'first 1 KiB of the response body' })),
    error: Nullable(Type.String()),
    outcome: Type.Union([Type.Literal('succeeded'), Type.Literal('retry'), Type.Literal('failed')]),
    requestHeaders: Nullable(
      Type.Record(Type.String(), Type.String(), {
        description:
          "the HTTP headers this attempt sent to the receiver, recorded when it was made (header name in lower case → value): `webhook-id`, `webhook-timestamp`, `webhook-signature`, `content-type`, `user-agent`, `x-webhook-event`, `x-webhook-test` on a test send, `authorization` and the custom headers, as they were then. Secrets are masked before they are stored: each signature keeps its `v1,` prefix (`v1,****` and its last 4 characters), `authorization` keeps its scheme (`Bearer ****` and the token's last 4 characters, as a subscription shows its credentials; `Basic ****` alone, since a Basic credential ends with the password); custom headers are not secrets and are shown as sent. Also recorded when the call got no answer (connection refused, timeout, TLS): the headers it sent or was sending. The HTTP client's own `host`, `content-length` and `connection` are not listed (they follow from `url` and the payload). null when no call was made (the notification was not sent, its OAuth2 token request failed) and for attempts logged before the service recorded headers",
      }),
    ),
    retryAfter: Nullable(
      Type.String({
        description:
          "the `Retry-After` header of the receiver's answer, as received (delay-seconds such as `120`, or an HTTP-date; its first 256 characters). On a 429 or 503 it is honoured as a lower bound, capped at 24 h: the next attempt (`nextAttemptAt` of the notification) is not due before it; on other statuses it is recorded but does not change the schedule, and a manual retry's attempt keeps the schedule it had. null when the answer had no Retry-After, when there was no answer, and for attempts logged before the service recorded it",
        examples: ['120', 'Mon, 01 Jul 2024 12:17:00 GMT'],
      }),
    ),
  },
  { title: 'NotificationAttempt' },
);

export const NotificationDetailSchema = Type.Intersect([NotificationSchema, Type.Object({ attempts: Type.Array(NotificationAttemptSchema) })], {
  title: 'NotificationDetail',
  description: 'a notification with every delivery attempt',
  examples: [SAMPLE_DELIVERED_NOTIFICATION, SAMPLE_RETRYING_NOTIFICATION],
});

const NotificationEventSchema = eventSchema(NOTIFICATION_EVENTS);

export const NotificationListQuerySchema = Type.Object({
  requestId: Type.Optional(Type.String({ maxLength: 64, description: 'only the notifications of this request' })),
  subscriptionId: Type.Optional(Type.String({ maxLength: 64, description: 'only the notifications routed to this subscription (test sends included)' })),
  status: Type.Optional(NotificationStatusSchema),
  event: Type.Optional(NotificationEventSchema),
  ...CreatedRangeQueryProperties,
  listen: Type.Optional(
    Type.Union([Type.Literal('include'), Type.Literal('exclude'), Type.Literal('only')], {
      description: 'the copies forwarded by `rewards listen` (url `listen:<session id>`): listed with the others (`include`, the default), left out (`exclude`) or alone (`only`)',
    }),
  ),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })),
  cursor: Type.Optional(Type.String({ maxLength: 64, description: 'nextCursor of the previous page' })),
  accountId: Type.Optional(Type.String({ description: 'operator only: act for this account' })),
});

export const NotificationListSchema = Type.Object(
  {
    data: Type.Array(NotificationSchema),
    nextCursor: Nullable(Type.String()),
  },
  {
    title: 'NotificationPage',
    examples: [{ data: [SAMPLE_NOTIFICATION, (({ attempts: _attempts, ...notification }) => notification)(SAMPLE_DELIVERED_NOTIFICATION)], nextCursor: SAMPLE_DELIVERED_NOTIFICATION.id }],
  },
);

export const NotificationParamsSchema = Type.Object({ notificationId: Type.String({ maxLength: 64 }) });
