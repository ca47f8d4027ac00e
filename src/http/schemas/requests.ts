import { Type } from 'typebox';
import { IDS, SAMPLE_EVENTS, SAMPLE_REQUEST } from './samples.js';
import { CreatedRangeQueryProperties } from './paging.js';
import { PARTNER_EVENT_NAMES } from '../../domain/requests/events.js';
import { CanceledItemSchema, DeliveredItemSchema } from '../../domain/notifications/payload-schemas.js';

/** JSON shapes of the request and request-event endpoints (seed tables, PRODUCT.md §6). */

export const CreateRequestBody = Type.Object(
  {
    experience: Type.String({ minLength: 1, maxLength: 200, description: "name of one of the account's experiences" }),
    event: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: "campaign event; must be one of the experience's events when it lists any" })),
    data: Type.Optional(Type.Unknown({ description: 'order data: a JSON object (anything else is rejected at registration with INVALID_DATA)' })),
    registeredCallbackUrl: Type.Optional(Type.String({ maxLength: 2048, description: 'notified with registered-requests for this request only' })),
    processedCallbackUrl: Type.Optional(Type.String({ maxLength: 2048, description: 'notified with processed-requests for this request only' })),
  },
  {
    additionalProperties: false,
    title: 'RewardRequestCreate',
    examples: [
      {
        experience: 'summer-campaign',
        event: 'purchase',
        data: { orderId: 'A-1001', amount: 150 },
        registeredCallbackUrl: 'https://hooks.example.com/rewards/registered',
        processedCallbackUrl: 'https://hooks.example.com/rewards/processed',
      },
    ],
  },
);

export const RequestAccepted = Type.Object({ id: Type.String(), status: Type.Literal('received') }, { title: 'RewardRequestAccepted', examples: [{ id: IDS.request, status: 'received' }] });

export const RequestIdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) });

/** A request's statuses (docs/requests.md, "States"). */
const REQUEST_STATUSES = ['received', 'registered', 'rejected', 'processed', 'failed'] as const;

export const RequestView = Type.Object(
  {
    id: Type.String(),
    status: Type.String({ enum: [...REQUEST_STATUSES] }),
    experience: Type.String(),
    event: Type.Optional(Type.String()),
    data: Type.Optional(Type.Unknown()),
    registeredCallbackUrl: Type.Optional(Type.String()),
    processedCallbackUrl: Type.Optional(Type.String()),
    rewardValue: Type.Optional(Type.Integer()),
    errorCode: Type.Optional(Type.String()),
    message: Type.Optional(Type.String()),
    createdAt: Type.String({ format: 'date-time' }),
    updatedAt: Type.String({ format: 'date-time' }),
    registeredAt: Type.Optional(Type.String({ format: 'date-time', description: 'when registration decided (registered or rejected)' })),
    concluded: Type.Optional(Type.String({ format: 'date-time' })),
    delivered: Type.Optional(Type.Array(DeliveredItemSchema)),
    canceled: Type.Optional(Type.Array(CanceledItemSchema)),
  },
  { title: 'RewardRequest', examples: [SAMPLE_REQUEST] },
);

export const RequestListQuery = Type.Object({
  status: Type.Optional(Type.String({ enum: [...REQUEST_STATUSES], description: 'only the requests in this status' })),
  experience: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'only the requests that named this experience (its `name`, the `experience` of POST /requests)' })),
  ...CreatedRangeQueryProperties,
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50, description: 'page size' })),
  cursor: Type.Optional(Type.String({ maxLength: 64, description: 'nextCursor of the previous page, as it was given' })),
  accountId: Type.Optional(Type.String({ description: 'operators: act for this account' })),
});

const SAMPLE_REJECTED_REQUEST = {
  id: 'req_01j9z3k9a2a1b2c3d4e5f6g7h8',
  status: 'rejected',
  experience: 'winter-campaign',
  event: 'purchase',
  errorCode: 'EXPERIENCE_NOT_FOUND',
  message: 'experience "winter-campaign" does not exist',
  createdAt: '2024-07-01T11:58:00.000Z',
  updatedAt: '2024-07-01T11:58:00.000Z',
  registeredAt: '2024-07-01T11:58:00.000Z',
};

export const RequestList = Type.Object(
  {
    data: Type.Array(RequestView, { description: 'newest first; each as GET /requests/{id} shows it' }),
    nextCursor: Type.Union([Type.String(), Type.Null()], { description: 'pass it as `cursor` for the next page; null on the last page' }),
  },
  {
    title: 'RewardRequestPage',
    examples: [
      { data: [SAMPLE_REQUEST, SAMPLE_REJECTED_REQUEST], nextCursor: SAMPLE_REJECTED_REQUEST.id },
      { data: [], nextCursor: null },
    ],
  },
);

export const RequestEventSchema = Type.Object(
  {
    name: Type.String(),
    title: Type.String(),
    date: Type.String({ format: 'date-time' }),
    refId: Type.String(),
    experience: Type.String(),
    data: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  },
  { title: 'RequestEvent', examples: [SAMPLE_EVENTS[0]] },
);

export const CreateRequestEventBody = Type.Object(
  {
    name: Type.String({ enum: [...PARTNER_EVENT_NAMES] }),
    refId: Type.String({ minLength: 1, maxLength: 200, description: "the partner's transaction id; (request, name, refId) makes the post idempotent" }),
    title: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    data: Type.Optional(
      Type.Object(
        {
          trackingCode: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
          trackingLink: Type.Optional(Type.String({ minLength: 1, maxLength: 2048 })),
        },
        { description: 'required with trackingCode and trackingLink for em-rota-de-entrega; other members are kept' },
      ),
    ),
  },
  {
    additionalProperties: false,
    title: 'RequestEventCreate',
    examples: [
      { name: 'em-rota-de-entrega', refId: 'trx-7781', title: 'Em rota de entrega', data: { trackingCode: 'BR123456789', trackingLink: 'https://tracking.example.com/BR123456789' } },
      { name: 'pedido-entregue', refId: 'trx-7781', title: 'Pedido entregue' },
    ],
  },
);
