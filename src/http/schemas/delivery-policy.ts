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
    circuitBreaker: Type.Union(
      [
        Type.Object({
          failures: Type.Integer({ minimum: 1, description: 'attempts in a row to one URL without an answer or with a 5xx that open its circuit (`CIRCUIT_BREAKER_FAILURES`)' }),
          probeIntervalMs: Type.Integer({ minimum: 1, description: 'from the opening to the first probe (`CIRCUIT_BREAKER_PROBE_INTERVAL`); the wait doubles after each failed probe' }),
          probeMaxIntervalMs: Type.Integer({ minimum: 1, description: 'the longest wait between two probes (`CIRCUIT_BREAKER_PROBE_MAX_INTERVAL`)' }),
        }),
        Type.Null(),
      ],
      {
        description:
          'the endpoint circuit breaker (docs/delivery.md, "Circuit breaker"): while a URL\'s circuit is open, new notifications to it are held, no attempt used, and one probe at a time tests it; null: no breaker (`CIRCUIT_BREAKER_FAILURES=0`)',
      },
    ),
    sourceAddresses: Type.Union([Type.Array(Type.String({ examples: ['203.0.113.7', '198.51.100.0/28'] })), Type.Null()], {
      description:
        'the IP addresses (or CIDR blocks) every call to a callback and every OAuth2 token request comes from, for a receiver whose firewall admits only known sources ' +
        '(`OUTBOUND_SOURCE_ADDRESSES`: the public addresses of the egress proxy or NAT the operator sends through); null: not published, calls may come from any address',
    }),
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
        circuitBreaker: { failures: 5, probeIntervalMs: 10_000, probeMaxIntervalMs: 60_000 },
        sourceAddresses: ['203.0.113.7', '203.0.113.8'],
      },
    ],
  },
);

export type DeliveryPolicy = Static<typeof DeliveryPolicySchema>;
