import { Type, type Static } from 'typebox';

/**
 * How the service delivers notifications to callbacks, as this deployment is configured
 * (GET /delivery-policy, docs/delivery.md): the operator's settings and the fixed rules a
 * receiver meets. Durations are integer milliseconds (`…Ms`), as `latencyMs` in the delivery log.
 */
export const DeliveryPolicySchema = Type.Object(
  {
    maxAttempts: Type.Integer({
      minimum: 1,
      description:
        'automatic attempts of one notification in all, the first included (`RETRY_MAX_ATTEMPTS`); after the last one fails the notification is `failed`. ' +
        'A manual retry (POST /notifications/{id}/retry) or a recovery is one more attempt, outside this count',
    }),
    retryIntervalMs: Type.Integer({
      minimum: 1,
      description: 'after a failed attempt the next one comes this long later (`RETRY_INTERVAL`), spread by `retryJitter`; the first attempt is immediate',
    }),
    retryJitter: Type.Number({
      minimum: 0,
      maximum: 1,
      description:
        "the spread of each retry: its delay is drawn uniformly between `retryIntervalMs × (1 − retryJitter)` and `retryIntervalMs × (1 + retryJitter)`, so an outage's backlog does not come back at once",
    }),
    retryAfterStatuses: Type.Array(Type.Integer(), {
      description: 'the statuses whose `Retry-After` (delay-seconds or an HTTP-date) is honoured: the next attempt comes no sooner than it asks; ignored on any other status',
    }),
    retryAfterCapMs: Type.Integer({ description: 'a `Retry-After` longer than this counts as this' }),
    timeoutMs: Type.Integer({
      minimum: 1,
      description:
        'one call to a callback fails when it has not ended within this (`CALLBACK_TIMEOUT`), from DNS and connect to the last byte of the answer; an OAuth2 token request for the callback has its own',
    }),
    disableAfterMs: Type.Union([Type.Integer({ minimum: 1 }), Type.Null()], {
      description: 'a subscription whose every attempt has failed for this long is switched off (`active: false` with `disabledReason`; `SUBSCRIPTION_DISABLE_AFTER`); null: never',
    }),
    testSendsPerMinute: Type.Integer({ description: 'test sends (POST /subscriptions/{id}/test) per subscription in any minute; more are a 429 with `Retry-After`' }),
  },
  {
    title: 'DeliveryPolicy',
    description: "How notifications are delivered and retried in this deployment (its operator's settings); the same for every account",
    examples: [
      {
        maxAttempts: 5,
        retryIntervalMs: 10_800_000,
        retryJitter: 0.2,
        retryAfterStatuses: [429, 503],
        retryAfterCapMs: 86_400_000,
        timeoutMs: 10_000,
        disableAfterMs: 432_000_000,
        testSendsPerMinute: 10,
      },
    ],
  },
);

export type DeliveryPolicy = Static<typeof DeliveryPolicySchema>;
