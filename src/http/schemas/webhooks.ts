import type { AnyNotificationEvent } from '../../domain/notifications/events.js';
import {
  DisabledSubscriptionsPayloadSchema,
  EndpointCircuitsPayloadSchema,
  FailedNotificationsPayloadSchema,
  ProcessedRequestsPayloadSchema,
  RegisteredRequestsPayloadSchema,
} from '../../domain/notifications/payload-schemas.js';
import { IDS, SAMPLE_PROCESSED_PAYLOAD, SAMPLE_REGISTERED_PAYLOAD, SAMPLE_REJECTED_PAYLOAD } from './samples.js';

/**
 * The OpenAPI 3.1 `webhooks` map: the notifications this service sends (two request events, two
 * operational ones), with their headers
 * and bodies. The bodies are the schemas the payload builders are typed by
 * (domain/notifications/payload-schemas.ts), so the document cannot drift from what is sent.
 */
const header = (name: string, description: string, required = true, example?: string) => ({
  name,
  in: 'header' as const,
  required,
  description,
  schema: { type: 'string' as const, ...(example ? { example } : {}) },
});

const HEADERS = [
  header('webhook-id', 'the notification id (`msg_…`): the same on every retry; deduplicate on it', true, IDS.registered),
  header('webhook-timestamp', 'Unix seconds of this attempt; refuse stale ones', true, '1732450000'),
  header('webhook-signature', 'Standard Webhooks: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, several space-separated during a secret rotation'),
  header('x-webhook-event', '`registered-requests` or `processed-requests`; for operational notifications `failed-notifications` or `disabled-subscriptions`'),
  header('x-webhook-test', '`true` on a test send (POST /subscriptions/{id}/test); absent otherwise', false),
  header('authorization', "from the subscription's authorization (Bearer, Basic, or an OAuth2 access token); absent for none or mTLS alone", false),
];

const RESPONSES = {
  '2XX': { description: 'received: any 2xx ends the notification as succeeded' },
  default: { description: 'anything else (and no answer within CALLBACK_TIMEOUT) is a failed attempt, retried after RETRY_INTERVAL ± 20 %; 429/503 Retry-After is honoured' },
};

function webhook(operationId: string, summary: string, description: string, schema: object, examples: Record<string, unknown>) {
  return {
    post: {
      operationId,
      summary,
      description,
      tags: ['notifications'],
      parameters: HEADERS,
      requestBody: { required: true, content: { 'application/json': { schema, examples: Object.fromEntries(Object.entries(examples).map(([name, value]) => [name, { value }])) } } },
      // Signed (webhook-signature), not authenticated by a scheme of this document.
      security: [],
      responses: RESPONSES,
    },
  };
}

export const WEBHOOKS = {
  'registered-requests': webhook(
    'registeredRequests',
    'A request was registered or rejected',
    "Registered: `{id, rewardValue?}`. Rejected: `{id, errorCode, message}`. Sent to the subscriptions of the event, or to the request's own `registeredCallbackUrl`.",
    RegisteredRequestsPayloadSchema,
    { registered: SAMPLE_REGISTERED_PAYLOAD, rejected: SAMPLE_REJECTED_PAYLOAD },
  ),
  'processed-requests': webhook(
    'processedRequests',
    'A request was processed into delivered and canceled prizes',
    "Sent to the subscriptions of the event, or to the request's own `processedCallbackUrl`.",
    ProcessedRequestsPayloadSchema,
    { processed: SAMPLE_PROCESSED_PAYLOAD },
  ),
  'failed-notifications': webhook(
    'failedNotifications',
    'A notification failed after its last attempt (operational)',
    "Sent to the account's `failed-notification` subscriptions, in the transaction that ends a request notification `failed` (its last attempt failed, or its delivery could not be run). Not for test sends, not for operational notifications, and not for the pending notifications failed by a switch-off (`disabled-subscriptions` counts them). `notificationId` is what POST /notifications/{id}/retry takes.",
    FailedNotificationsPayloadSchema,
    {
      failed: {
        notificationId: IDS.processed,
        requestId: IDS.request,
        event: 'processed-requests',
        url: 'https://hooks.example.com/rewards/processed',
        attempts: 8,
        lastStatusCode: 503,
        lastError: 'callback answered HTTP 503',
        failedAt: '2024-07-01T14:05:00.000Z',
      },
    },
  ),
  'disabled-subscriptions': webhook(
    'disabledSubscriptions',
    'A subscription was switched off (operational)',
    "Sent to the account's `disabled-subscription` subscriptions, in the transaction that switches a subscription off because every attempt to its URL failed for SUBSCRIPTION_DISABLE_AFTER. `failedPending` counts its pending notifications ended `failed` by the switch-off.",
    DisabledSubscriptionsPayloadSchema,
    {
      disabled: {
        subscriptionId: IDS.subscription,
        event: 'processed-request',
        url: 'https://hooks.example.com/rewards/processed',
        reason: 'every delivery attempt failed for 5 days (since 2024-07-01T12:00:00.000Z); switched off automatically (SUBSCRIPTION_DISABLE_AFTER)',
        disabledAt: '2024-07-06T12:00:00.000Z',
        failedPending: 42,
      },
    },
  ),
  'endpoint-circuits': webhook(
    'endpointCircuits',
    "An endpoint's circuit breaker opened or closed (operational)",
    'Sent to the account\'s `endpoint-circuit` subscriptions, in the transaction that opens or closes the circuit breaker of one of its callback URLs (docs/delivery.md, "Circuit breaker"). While open, new notifications to the URL are held (no attempt made) and one probe at a time tests it; when it closes, `held` counts the notifications now being sent.',
    EndpointCircuitsPayloadSchema,
    {
      opened: {
        url: 'https://hooks.example.com/rewards/processed',
        state: 'open',
        changedAt: '2024-07-01T14:05:00.000Z',
        failures: 5,
        lastFailure: 'connection refused by hooks.example.com',
        nextProbeAt: '2024-07-01T14:05:10.000Z',
        held: 0,
      },
      closed: {
        url: 'https://hooks.example.com/rewards/processed',
        state: 'closed',
        changedAt: '2024-07-01T14:15:20.000Z',
        failures: 0,
        lastFailure: 'connection refused by hooks.example.com',
        nextProbeAt: null,
        held: 12000,
      },
    },
  ),
  // One entry per event of domain/notifications/events.ts: a missing or unknown one is a type error.
} satisfies Record<AnyNotificationEvent, ReturnType<typeof webhook>>;
