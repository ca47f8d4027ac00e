import { Type, type TSchema } from 'typebox';
import { EVENTS, SUBSCRIPTION_EVENTS } from '../../domain/notifications/events.js';
import { SAMPLE_SUBSCRIPTION } from './samples.js';

/**
 * JSON shapes of the subscription endpoints (seed "Subscription", PRODUCT.md §5). The schemas
 * check types and close every object; the rules they cannot express (event aliases, header names,
 * URL policy, masked secrets) live in domain/subscriptions/validation.ts.
 */

const OAuth2 = Type.Object(
  {
    client_id: Type.String({ minLength: 1, maxLength: 1024 }),
    client_secret: Type.String({ minLength: 1, maxLength: 8192, description: 'write-only in effect: returned masked ("****" + last 4)' }),
    url: Type.String({ description: 'token endpoint (client credentials grant); same rules as callback.url' }),
    audience: Type.Optional(Type.String({ maxLength: 2048 })),
  },
  { additionalProperties: false, title: 'OAuth2Credentials' },
);

const AuthorizationSchema = Type.Object(
  {
    Basic: Type.Optional(Type.String({ maxLength: 8192, description: 'base64 of "user:password", optionally prefixed with "Basic "; returned masked' })),
    Bearer: Type.Optional(Type.String({ maxLength: 8192, description: 'the token, optionally prefixed with "Bearer "; returned masked' })),
    oauth2: Type.Optional(OAuth2),
    mtls: Type.Optional(
      Type.Object(
        {
          twoFactor: Type.Optional(Type.Object({ oauth2: Type.Optional(OAuth2) }, { additionalProperties: false })),
        },
        { additionalProperties: false, description: '{} = mutual TLS with the service certificate; twoFactor.oauth2 adds OAuth2' },
      ),
    ),
  },
  { additionalProperties: false, title: 'CallbackAuthorization', description: 'how the service authenticates to the callback; every member optional' },
);

const CustomHeaders = Type.Record(Type.String(), Type.String(), {
  description: 'header name → value; HTTP token names, no CR/LF; Host, Content-Length, Content-Type, Transfer-Encoding, Connection, Authorization and webhook-* are refused',
});

const CallbackInput = Type.Object(
  {
    url: Type.String({ description: 'http or https, no credentials, at most 2048 characters, public address unless CALLBACK_ALLOW_PRIVATE_NETWORKS=true' }),
    authorization: Type.Optional(Type.Union([AuthorizationSchema, Type.Null()])),
    customHeaders: Type.Optional(CustomHeaders),
  },
  { additionalProperties: false, title: 'CallbackInput' },
);

const requestEvents = EVENTS.filter((e) => e.kind === 'request');
const operationalEvents = EVENTS.filter((e) => e.kind === 'operational');
const singulars = (events: readonly { subscription: string }[]) => events.map((e) => e.subscription).join(' | ');
/** What `event` takes, said from the one list of events (domain/notifications/events.ts). */
const EVENT_INPUT_DESCRIPTION = `${singulars(requestEvents)} (request events), or ${singulars(operationalEvents)} (operational events: ${operationalEvents.map((e) => e.description).join(', ')}); plural forms accepted`;

/** Create and update share one body; create requires `event` and `callback` (checked in the domain). */
export const SubscriptionBodySchema = Type.Object(
  {
    event: Type.Optional(Type.String({ description: EVENT_INPUT_DESCRIPTION })),
    description: Type.Optional(Type.String({ maxLength: 500 })),
    active: Type.Optional(Type.Boolean()),
    experiences: Type.Optional(Type.Array(Type.String(), { maxItems: 100, description: 'experience names; [] = every experience. Must be [] for an operational event' })),
    callback: Type.Optional(CallbackInput),
    rateLimit: Type.Optional(
      Type.Union([Type.Integer({ minimum: 1, maximum: 10_000 }), Type.Null()], {
        description: 'deliveries per second at most, across every worker (over the limit they wait their turn); null or absent = no limit',
      }),
    ),
    _id: Type.Optional(Type.String({ description: 'read-only: may be echoed back unchanged' })),
    accountId: Type.Optional(Type.String({ description: 'read-only: may be echoed back unchanged' })),
    createdAt: Type.Optional(Type.String({ description: 'read-only: ignored' })),
    updatedAt: Type.Optional(Type.String({ description: 'read-only: ignored' })),
  },
  {
    additionalProperties: false,
    title: 'SubscriptionInput',
    description: 'the body of a creation (`event` and `callback` required) and of an update (members omitted are kept)',
    // The seed contract's samples: a creation, and an update that omits `event`.
    examples: [
      {
        event: 'processed-request',
        description: 'Processed requests of the summer campaign',
        experiences: ['summer-campaign'],
        callback: { url: 'https://hooks.example.com/rewards/processed', authorization: { Bearer: 'my-receiver-token' }, customHeaders: { 'x-tenant': 'acme' } },
      },
      { description: 'Both summer experiences', experiences: ['summer-campaign', 'summer-bonus'], callback: { url: 'https://hooks.example.com/rewards/processed' } },
    ],
  },
);

const SAMPLE_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

export const SubscriptionSchema = Type.Object(
  {
    _id: Type.String(),
    accountId: Type.String(),
    event: Type.String(),
    description: Type.String(),
    active: Type.Boolean(),
    experiences: Type.Array(Type.String()),
    callback: Type.Object(
      {
        url: Type.String(),
        authorization: Type.Optional(AuthorizationSchema),
        customHeaders: CustomHeaders,
      },
      { title: 'Callback' },
    ),
    createdAt: Type.String({ format: 'date-time' }),
    updatedAt: Type.String({ format: 'date-time' }),
    rateLimit: Type.Optional(Type.Integer({ minimum: 1, description: 'deliveries per second at most; absent = no limit' })),
    disabledReason: Type.Optional(
      Type.String({ description: 'present when the service switched the subscription off (all attempts failed for SUBSCRIPTION_DISABLE_AFTER); a PUT with active: true clears it' }),
    ),
    disabledAt: Type.Optional(Type.String({ format: 'date-time' })),
  },
  { title: 'Subscription', examples: [SAMPLE_SUBSCRIPTION] },
);

export const CreatedSubscriptionSchema = Type.Object(
  {
    ...SubscriptionSchema.properties,
    secret: Type.String({ description: 'the Standard Webhooks signing secret (whsec_…); also at GET /subscriptions/{id}/secret' }),
  },
  { title: 'CreatedSubscription', description: 'a subscription as created: with its signing secret', examples: [{ ...SAMPLE_SUBSCRIPTION, secret: SAMPLE_SECRET }] },
);

export const SubscriptionParamsSchema = Type.Object({ subscriptionId: Type.String({ maxLength: 128 }) });

export const SubscriptionListQuerySchema = Type.Object({
  event: Type.Optional(Type.String({ description: `${SUBSCRIPTION_EVENTS.join(' | ')} (plural forms accepted)` })),
  experience: Type.Optional(Type.String({ description: 'only subscriptions whose experiences name this one' })),
  active: Type.Optional(Type.Boolean()),
  accountId: Type.Optional(Type.String({ description: 'operators: act for this account' })),
});

export const OperatorQuerySchema = Type.Object({
  accountId: Type.Optional(Type.String({ description: 'operators: act for this account' })),
});

export const SigningSecretSchema = Type.Object(
  {
    secret: Type.String({ description: 'whsec_ + base64 of 32 random bytes (Standard Webhooks)' }),
    createdAt: Type.String({ format: 'date-time' }),
    previousSecretExpiresAt: Type.Optional(
      Type.String({
        format: 'date-time',
        description:
          'when the replaced secret stops signing: until then every notification carries a signature with each secret. A rotation answers it ' +
          '(its `overlap` after `createdAt`; equal to `createdAt` with `overlap: "0m"`); a read shows it while the replaced secret still signs. ' +
          'Absent when there is none',
      }),
    ),
  },
  {
    title: 'SigningSecret',
    examples: [
      { secret: SAMPLE_SECRET, createdAt: '2024-07-01T12:00:00.000Z' },
      { secret: 'whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD', createdAt: '2024-08-01T09:00:00.000Z', previousSecretExpiresAt: '2024-08-02T09:00:00.000Z' },
    ],
  },
);

/** What a rotation does with the replaced secret, for both rotation routes' descriptions. */
export const ROTATION_OVERLAP_DOC =
  'The replaced secret keeps signing for `overlap` (default `24h`, at most `7d`): in that time every notification carries a signature with each ' +
  'of the two secrets, so the receiver can switch without rejecting any; `previousSecretExpiresAt` says when it stops. `"overlap": "0m"` ' +
  'retires it at once, for a secret that leaked: only the new secret signs (delivery workers pick a rotation up within a second). ' +
  'An `overlap` that is not a duration from `0m` to `7d` is a 400 (`body.overlap`). No body, or `{}`, is the default.';

/** The optional body of a signing-secret rotation: how long the replaced secret keeps signing. */
export const RotateSecretBodySchema = Type.Object(
  {
    overlap: Type.Optional(
      Type.String({
        description:
          'how long the replaced secret keeps signing alongside the new one, in the duration syntax of the configuration (`30m`, `1h`, `3d`): ' +
          'from `0m` (it stops at once: only the new secret signs, for a secret that leaked) to `7d`. Default `24h`',
      }),
    ),
  },
  { additionalProperties: false, title: 'SecretRotation', examples: [{ overlap: '1h' }, { overlap: '0m' }, {}] },
);

export const StatsQuerySchema = Type.Object({
  window: Type.Optional(Type.String({ description: '1h | 24h | 7d (default 24h)' })),
  accountId: Type.Optional(Type.String({ description: 'operators: act for this account' })),
});

const nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

const ATTEMPTS_NOTE =
  'delivery attempts by outcome (attempts, not notifications: one delivered at its third attempt counts 2 retry and 1 succeeded); ' +
  'test sends and notifications not sent (subscription or account inactive) do not count';
const attemptCounts = (description: string) =>
  Type.Object(
    {
      succeeded: Type.Integer({ minimum: 0, description: 'attempts the receiver answered with a 2xx' }),
      retry: Type.Integer({ minimum: 0, description: 'attempts that failed with another attempt scheduled' }),
      failed: Type.Integer({ minimum: 0, description: 'attempts that failed with no attempt left: the notification ended failed' }),
    },
    { description },
  );
const SuccessRate = nullable(Type.Number({ minimum: 0, maximum: 1, description: 'per attempt, not per notification: succeeded / all attempts; null without attempts' }));
const LatencyPercentiles = Type.Object(
  { p50: nullable(Type.Number({ description: 'median, ms' })), p95: nullable(Type.Number({ description: '95th percentile, ms' })) },
  { title: 'LatencyPercentiles', description: 'of the attempts, estimated from a histogram (1-2-5 steps from 1 ms to 30 s; exact to the step); null without attempts' },
);

const StatsBucketSchema = Type.Object(
  {
    start: Type.String({ format: 'date-time', description: 'start of the bucket; it ends where the next one starts, the last one at the end of the five-minute bucket in progress' }),
    attempts: attemptCounts(`${ATTEMPTS_NOTE}, in this bucket`),
    successRate: SuccessRate,
    latencyMs: LatencyPercentiles,
  },
  { title: 'EndpointStatsBucket', description: 'one bucket of the series: the attempts made in it' },
);

/** An example window of `1h` at 12:07: per five-minute bucket [succeeded, retry, failed, p50, p95]; the totals are their sums. */
// Twelve buckets, four to a line: the table reads as the series it is.
// prettier-ignore
const SAMPLE_SERIES: Array<[number, number, number, number, number]> = [
  [130, 0, 0, 41.2, 160], [142, 1, 0, 43, 175], [138, 0, 0, 40.8, 150], [151, 0, 0, 42.1, 170],
  [149, 3, 0, 44.6, 190], [97, 12, 1, 55.3, 2400], [160, 2, 0, 42.7, 180], [155, 0, 0, 41.9, 165],
  [147, 0, 0, 42.3, 172], [158, 1, 0, 43.4, 178], [162, 0, 0, 42, 168], [58, 0, 0, 41.5, 158],
];
const rate = (succeeded: number, all: number) => (all === 0 ? null : Math.round((succeeded / all) * 10_000) / 10_000);
const SAMPLE_SINCE = Date.parse('2024-07-02T11:10:00.000Z');
const sampleTotal = (i: 0 | 1 | 2) => SAMPLE_SERIES.reduce((sum, bucket) => sum + bucket[i], 0);

export const EndpointStatsSchema = Type.Object(
  {
    window: Type.String({ description: '1h | 24h | 7d' }),
    since: Type.String({
      format: 'date-time',
      description:
        'start of the window and of its first bucket: the window ends with the five-minute bucket in progress and is exactly as long as its name, ' + 'so `1h` covers the last 55 to 60 minutes',
    }),
    attempts: attemptCounts(`${ATTEMPTS_NOTE}, in the window: the sums of \`series\``),
    successRate: SuccessRate,
    latencyMs: LatencyPercentiles,
    series: Type.Array(StatsBucketSchema, {
      description:
        'the window in equal buckets, oldest first, every bucket present (no attempt: zeros, null rate and latency): `1h` 12 × 5 minutes, ' +
        "`24h` 24 × 1 hour, `7d` 28 × 6 hours. Read from the same rollup as the window's figures: the buckets' attempts add up to `attempts`",
    }),
    lastSuccess: nullable(
      Type.Object({ at: Type.String({ format: 'date-time' }), statusCode: nullable(Type.Integer()) }, { description: 'the last successful attempt, whenever it was (not limited to the window)' }),
    ),
    lastFailure: nullable(
      Type.Object(
        { at: Type.String({ format: 'date-time' }), statusCode: nullable(Type.Integer()), error: nullable(Type.String()) },
        { description: 'the last failed attempt, whenever it was (not limited to the window)' },
      ),
    ),
    consecutiveFailures: Type.Integer({ description: 'failed attempts (not notifications) since the last successful one, not limited to the window' }),
    pending: Type.Integer({
      description:
        'notifications (not attempts) of this subscription waiting for an attempt now, test sends included: exactly those that ' + 'GET /notifications?subscriptionId={id}&status=pending lists',
    }),
    failed: Type.Integer({
      description:
        'notifications (not attempts) of this subscription whose status is failed now, test sends included: exactly those that ' +
        'GET /notifications?subscriptionId={id}&status=failed lists. One retried or recovered leaves it, and is counted again only if it fails again',
    }),
    circuit: Type.Object(
      {
        state: Type.Union([Type.Literal('closed'), Type.Literal('open'), Type.Literal('draining')], {
          description:
            '`closed`: notifications go out as usual; `open`: new notifications to the URL are held (no attempt made) while probes test it; `draining`: it closed again and what it held is being sent, oldest first',
        }),
        failures: Type.Integer({ minimum: 0, description: 'attempts to the URL in a row that got no answer or a 5xx (CIRCUIT_BREAKER_FAILURES of them open it)' }),
        lastFailure: nullable(Type.String({ description: 'the latest of those failures, in words' })),
        openedAt: nullable(Type.String({ format: 'date-time', description: 'open: since when' })),
        nextProbeAt: nullable(
          Type.String({ format: 'date-time', description: 'open: when the next probe may go (one at a time; the wait doubles after each failed probe up to CIRCUIT_BREAKER_PROBE_MAX_INTERVAL)' }),
        ),
        probes: Type.Integer({ minimum: 0, description: 'open: probes that failed since it opened' }),
        held: Type.Integer({ minimum: 0, description: 'notifications to the URL the breaker holds now' }),
      },
      { description: 'the circuit breaker of the subscription\'s callback URL (docs/delivery.md, "Circuit breaker"), shared by the account\'s subscriptions and requests to that URL' },
    ),
  },
  {
    title: 'EndpointStats',
    examples: [
      {
        window: '1h',
        since: new Date(SAMPLE_SINCE).toISOString(),
        attempts: { succeeded: sampleTotal(0), retry: sampleTotal(1), failed: sampleTotal(2) },
        successRate: rate(sampleTotal(0), sampleTotal(0) + sampleTotal(1) + sampleTotal(2)),
        latencyMs: { p50: 42.4, p95: 185 },
        series: SAMPLE_SERIES.map(([succeeded, retry, failed, p50, p95], i) => ({
          start: new Date(SAMPLE_SINCE + i * 5 * 60_000).toISOString(),
          attempts: { succeeded, retry, failed },
          successRate: rate(succeeded, succeeded + retry + failed),
          latencyMs: { p50, p95 },
        })),
        lastSuccess: { at: '2024-07-02T12:06:58.000Z', statusCode: 200 },
        lastFailure: { at: '2024-07-02T11:38:12.000Z', statusCode: 503, error: null },
        consecutiveFailures: 0,
        pending: 3,
        failed: 1,
        circuit: { state: 'closed', failures: 0, lastFailure: null, openedAt: null, nextProbeAt: null, probes: 0, held: 0 },
      },
    ],
  },
);
