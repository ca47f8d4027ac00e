import { Type, type TSchema } from 'typebox';
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
  { additionalProperties: false },
);

export const AuthorizationSchema = Type.Object(
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
  { additionalProperties: false },
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
  { additionalProperties: false },
);

/** Create and update share one body; create requires `event` and `callback` (checked in the domain). */
export const SubscriptionBodySchema = Type.Object(
  {
    event: Type.Optional(Type.String({ description: 'registered-request | processed-request (plural forms accepted)' })),
    description: Type.Optional(Type.String({ maxLength: 500 })),
    active: Type.Optional(Type.Boolean()),
    experiences: Type.Optional(Type.Array(Type.String(), { maxItems: 100, description: 'experience names; [] = every experience' })),
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

export const SubscriptionSchema = Type.Object({
  _id: Type.String(),
  accountId: Type.String(),
  event: Type.String(),
  description: Type.String(),
  active: Type.Boolean(),
  experiences: Type.Array(Type.String()),
  callback: Type.Object({
    url: Type.String(),
    authorization: Type.Optional(AuthorizationSchema),
    customHeaders: CustomHeaders,
  }),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
  rateLimit: Type.Optional(Type.Integer({ minimum: 1, description: 'deliveries per second at most; absent = no limit' })),
  disabledReason: Type.Optional(Type.String({ description: 'present when the service switched the subscription off (all attempts failed for SUBSCRIPTION_DISABLE_AFTER); a PUT with active: true clears it' })),
  disabledAt: Type.Optional(Type.String({ format: 'date-time' })),
}, { examples: [SAMPLE_SUBSCRIPTION] });

export const CreatedSubscriptionSchema = Type.Object({
  ...SubscriptionSchema.properties,
  secret: Type.String({ description: 'the Standard Webhooks signing secret (whsec_…); also at GET /subscriptions/{id}/secret' }),
}, { examples: [{ ...SAMPLE_SUBSCRIPTION, secret: SAMPLE_SECRET }] });

export const SubscriptionParamsSchema = Type.Object({ subscriptionId: Type.String({ maxLength: 128 }) });

export const SubscriptionListQuerySchema = Type.Object({
  event: Type.Optional(Type.String({ description: 'registered-request | processed-request (plural forms accepted)' })),
  experience: Type.Optional(Type.String({ description: 'only subscriptions whose experiences name this one' })),
  active: Type.Optional(Type.Boolean()),
  accountId: Type.Optional(Type.String({ description: 'operators: act for this account' })),
});

export const OperatorQuerySchema = Type.Object({
  accountId: Type.Optional(Type.String({ description: 'operators: act for this account' })),
});

export const SigningSecretSchema = Type.Object({
  secret: Type.String({ description: 'whsec_ + base64 of 32 random bytes (Standard Webhooks)' }),
  createdAt: Type.String({ format: 'date-time' }),
  previousSecretExpiresAt: Type.Optional(Type.String({ format: 'date-time', description: 'the replaced secret keeps signing until then' })),
}, { examples: [{ secret: SAMPLE_SECRET, createdAt: '2024-07-01T12:00:00.000Z' }, { secret: 'whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD', createdAt: '2024-08-01T09:00:00.000Z', previousSecretExpiresAt: '2024-08-02T09:00:00.000Z' }] });

export const StatsQuerySchema = Type.Object({
  window: Type.Optional(Type.String({ description: '1h | 24h | 7d (default 24h)' })),
  accountId: Type.Optional(Type.String({ description: 'operators: act for this account' })),
});

const nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

export const EndpointStatsSchema = Type.Object({
  window: Type.String({ description: '1h | 24h | 7d' }),
  since: Type.String({ format: 'date-time', description: 'start of the oldest five-minute bucket counted' }),
  attempts: Type.Object({ succeeded: Type.Integer(), retry: Type.Integer(), failed: Type.Integer() }, { description: 'attempts in the window by outcome (retry: failed, another attempt scheduled)' }),
  successRate: nullable(Type.Number({ minimum: 0, maximum: 1, description: 'succeeded / all attempts; null without attempts' })),
  latencyMs: Type.Object({ p50: nullable(Type.Number()), p95: nullable(Type.Number()) }, { description: 'estimated from a histogram (1-2-5 steps from 1 ms to 30 s)' }),
  lastSuccess: nullable(Type.Object({ at: Type.String({ format: 'date-time' }), statusCode: nullable(Type.Integer()) })),
  lastFailure: nullable(Type.Object({ at: Type.String({ format: 'date-time' }), statusCode: nullable(Type.Integer()), error: nullable(Type.String()) })),
  consecutiveFailures: Type.Integer({ description: 'failed attempts since the last success' }),
  pending: Type.Integer({ description: 'notifications waiting for an attempt' }),
}, {
  examples: [
    {
      window: '24h',
      since: '2024-07-01T12:05:00.000Z',
      attempts: { succeeded: 18_412, retry: 37, failed: 2 },
      successRate: 0.9979,
      latencyMs: { p50: 42.5, p95: 180 },
      lastSuccess: { at: '2024-07-02T12:04:31.000Z', statusCode: 200 },
      lastFailure: { at: '2024-07-02T09:12:07.000Z', statusCode: 503, error: null },
      consecutiveFailures: 0,
      pending: 3,
    },
  ],
});
