import { Type, type Static } from 'typebox';

/**
 * The bodies of the two notifications, exactly the seed's tables, as JSON Schemas. The types the
 * payload builders return are derived from them (`Static`), and the OpenAPI document publishes
 * them under `webhooks` (http/schemas/webhooks.ts): what is sent and what is documented are one.
 * Objects are closed (`additionalProperties: false`), so a member added to a body without the
 * schema fails the test that validates real bodies against the published document.
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
  closed,
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
  closed,
);

/** `registered-requests`: `rewardValue` when registered with a reward; `errorCode` and `message` when rejected. */
export const RegisteredRequestsPayloadSchema = Type.Object(
  {
    id: Type.String({ description: 'the request id' }),
    rewardValue: Type.Optional(Type.Integer({ minimum: 1, description: 'Σ value × quantity of the prizes, when above zero' })),
    errorCode: Type.Optional(Type.String({ description: 'why the request was rejected' })),
    message: Type.Optional(Type.String()),
  },
  { ...closed, title: 'registered-requests' },
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
  { ...closed, title: 'processed-requests' },
);

export type DeliveredItem = Static<typeof DeliveredItemSchema>;
export type CanceledItem = Static<typeof CanceledItemSchema>;
export type RegisteredRequestsPayload = Static<typeof RegisteredRequestsPayloadSchema>;
export type ProcessedRequestsPayload = Static<typeof ProcessedRequestsPayloadSchema>;
