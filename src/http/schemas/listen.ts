import { Type } from 'typebox';
import { eventSchema } from '../../domain/notifications/event-schema.js';
import { REQUEST_EVENTS } from '../../domain/notifications/events.js';
import { OperatorQuerySchema } from './subscription.js';
import { IDS, SAMPLE_REGISTERED_PAYLOAD } from './samples.js';

/** `rewards listen` (docs/receiving-webhooks.md, "Webhooks on a laptop"). */

const ListenEventSchema = eventSchema(REQUEST_EVENTS, {
  description: 'a notification event',
  examples: ['registered-requests'],
});

const SAMPLE_SESSION_ID = 'lsn_01j9z3k9a0a1b2c3d4e5f6g7h8';
const SAMPLE_BODY = JSON.stringify(SAMPLE_REGISTERED_PAYLOAD);

export const ListenSessionBodySchema = Type.Object(
  {
    events: Type.Optional(
      Type.Array(ListenEventSchema, {
        minItems: 1,
        uniqueItems: true,
        description: 'the events the session receives; default both',
        examples: [[...REQUEST_EVENTS]],
      }),
    ),
  },
  { title: 'ListenSessionInput', additionalProperties: false, examples: [{ events: [...REQUEST_EVENTS] }] },
);

export const ListenSessionSchema = Type.Object(
  {
    id: Type.String({ description: 'the session; its copies show in the delivery log with url `listen:<id>`', examples: [SAMPLE_SESSION_ID] }),
    accountId: Type.String({ description: 'the account whose events it receives', examples: [IDS.account] }),
    events: Type.Array(ListenEventSchema, { description: 'the events it receives', examples: [[...REQUEST_EVENTS]] }),
    createdAt: Type.String({ format: 'date-time', examples: ['2024-07-01T12:00:00.000Z'] }),
    expiresAt: Type.String({
      format: 'date-time',
      description: 'it ends then unless polled: each poll of its deliveries moves this a minute ahead',
      examples: ['2024-07-01T12:01:00.000Z'],
    }),
    signingSecrets: Type.Array(
      Type.Object({
        url: Type.Union([Type.String(), Type.Null()], {
          description: "the receiver URL of the account's subscriptions whose secret this is; null for the account's default secret (outcomes that go to no subscription)",
          examples: ['https://rewards.example.com/hooks'],
        }),
        secret: Type.String({ description: 'whsec_ + base64 (Standard Webhooks): configure it in the local receiver', examples: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'] }),
      }),
      {
        description:
          "the secrets the forwarded deliveries are signed with, as the real ones: each delivery is signed with the secret of the receiver its outcome went to (its subscription's URL, or a per-request URL's), or the account's default when it went to none",
      },
    ),
  },
  {
    title: 'ListenSession',
    examples: [
      {
        id: SAMPLE_SESSION_ID,
        accountId: IDS.account,
        events: [...REQUEST_EVENTS],
        createdAt: '2024-07-01T12:00:00.000Z',
        expiresAt: '2024-07-01T12:01:00.000Z',
        signingSecrets: [
          { url: 'https://rewards.example.com/hooks', secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' },
          { url: null, secret: 'whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD' },
        ],
      },
    ],
  },
);

export const ListenSessionParamsSchema = Type.Object({ sessionId: Type.String({ description: 'the listen session', examples: [SAMPLE_SESSION_ID] }) });
export const ListenDeliveryParamsSchema = Type.Object({
  sessionId: Type.String({ description: 'the listen session', examples: [SAMPLE_SESSION_ID] }),
  notificationId: Type.String({ description: 'the delivery (its `notificationId`)', examples: [IDS.registered] }),
});

export const ListenQuerySchema = OperatorQuerySchema;

export const ListenPollQuerySchema = Type.Object({
  ...OperatorQuerySchema.properties,
  wait: Type.Optional(Type.Integer({ minimum: 0, maximum: 25, description: 'seconds to wait for a delivery when none is waiting (long poll); default 0', examples: [25] })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'at most this many deliveries; default 10', examples: [10] })),
});

const SAMPLE_DELIVERY = {
  notificationId: IDS.registered,
  event: 'registered-requests',
  headers: {
    'content-type': 'application/json',
    'user-agent': 'RewardRequestService/1.0',
    'webhook-id': IDS.registered,
    'webhook-timestamp': '1719835200',
    'webhook-signature': 'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=',
    'x-webhook-event': 'registered-requests',
  },
  body: SAMPLE_BODY,
};

export const ListenDeliveriesSchema = Type.Object(
  {
    data: Type.Array(
      Type.Object({
        notificationId: Type.String({ description: 'the copy in the delivery log (url `listen:<session>`), also its `webhook-id`', examples: [IDS.registered] }),
        event: Type.String({ description: 'the notification event', examples: ['registered-requests'] }),
        headers: Type.Record(Type.String(), Type.String(), {
          description:
            'the headers to send as they are: Content-Type, User-Agent, webhook-id, webhook-timestamp (now), webhook-signature (signed as the real call: see `signingSecrets` of the session) and x-webhook-event',
          examples: [SAMPLE_DELIVERY.headers],
        }),
        body: Type.String({ description: 'the exact body to POST (it is what is signed: send it byte for byte)', examples: [SAMPLE_BODY] }),
      }),
      { description: "the deliveries taken by this poll, oldest first: each is this caller's for a minute, then a later poll gets it again if no result came" },
    ),
  },
  { title: 'ListenDeliveries', examples: [{ data: [SAMPLE_DELIVERY] }, { data: [] }] },
);

export const ListenResultBodySchema = Type.Object(
  {
    statusCode: Type.Optional(Type.Integer({ minimum: 100, maximum: 599, description: "the local receiver's HTTP status; absent when it gave no answer", examples: [204] })),
    latencyMs: Type.Integer({ minimum: 0, description: 'how long the local call took', examples: [12] }),
    responseBody: Type.Optional(Type.String({ maxLength: 65536, description: "the local answer's body (its first 1 KiB is logged)", examples: [''] })),
    error: Type.Optional(Type.String({ maxLength: 1000, description: 'why there was no answer (connection refused, timeout)', examples: ['connect ECONNREFUSED 127.0.0.1:3000'] })),
  },
  {
    title: 'ListenResultInput',
    additionalProperties: false,
    examples: [
      { statusCode: 204, latencyMs: 12 },
      { latencyMs: 3, error: 'connect ECONNREFUSED 127.0.0.1:3000' },
    ],
  },
);

export const ListenResultSchema = Type.Object(
  {
    status: Type.Union([Type.Literal('succeeded'), Type.Literal('failed')], {
      description: "the copy's status in the delivery log: succeeded on a 2xx, failed otherwise (one attempt)",
      examples: ['succeeded'],
    }),
  },
  { title: 'ListenResult', examples: [{ status: 'succeeded' }] },
);
