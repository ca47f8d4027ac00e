import { Type } from 'typebox';
import type { PrizeKind } from './experience.js';

/**
 * The JSON an operator writes to define an experience: the admin API's POST and PUT bodies and
 * each entry of an `rewards experiences import` file. One schema, so both paths accept exactly
 * the same documents and report the same field paths. Each `title` is the type's name in the
 * OpenAPI document's components (http/openapi.ts).
 */

/** Letters, digits, `.`, `_`, `-`: safe in URLs, logs and the `experience` member of a request. */
const EXPERIENCE_NAME_PATTERN = '^[A-Za-z0-9._-]{1,100}$';
const MAX_PRIZES = 100;
// stock and quantity are PostgreSQL `integer` columns (int4); larger values must be a 400, not a 500.
const MAX_INT4 = 2_147_483_647;

const PrizeInputSchema = Type.Object(
  {
    id: Type.String({ pattern: EXPERIENCE_NAME_PATTERN, description: 'unique within the experience; reported as rewardId' }),
    bucket: Type.String({ minLength: 1, maxLength: 100, description: 'prize name, reported as deliveryDetail.info.bucket' }),
    title: Type.String({ minLength: 1, maxLength: 200 }),
    description: Type.Optional(Type.String({ maxLength: 2000, default: '' })),
    value: Type.Number({ minimum: 0, maximum: 1_000_000_000 }),
    quantity: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000, default: 1 })),
    kind: Type.Union([Type.Literal('coupon'), Type.Literal('payment'), Type.Literal('physical')]),
    stock: Type.Optional(
      Type.Union([Type.Integer({ minimum: 0, maximum: MAX_INT4 }), Type.Null()], {
        description: 'units left, null = unlimited. Omitted: unlimited for a new prize, unchanged for a prize id that already exists',
      }),
    ),
  },
  { additionalProperties: false, title: 'PrizeInput' },
);

/** Members a GET returns but nobody writes: accepted and ignored, so a GET result can be edited and sent back. */
const READ_ONLY_MEMBERS = {
  id: Type.Optional(Type.String({ description: 'read-only: ignored' })),
  accountId: Type.Optional(Type.String({ description: 'read-only: ignored (the account comes from ?accountId= or --account)' })),
  createdAt: Type.Optional(Type.String({ description: 'read-only: ignored' })),
  updatedAt: Type.Optional(Type.String({ description: 'read-only: ignored' })),
};

const name = Type.String({ pattern: EXPERIENCE_NAME_PATTERN, description: 'the key requests use (`experience`); unique per account' });
const title = Type.String({ minLength: 1, maxLength: 200 });
const events = (extra: { default?: string[] } = {}) =>
  Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
    uniqueItems: true,
    maxItems: 100,
    description: 'request `event` values allowed; empty = any',
    ...extra,
  });
const prizes = (extra: { default?: unknown[] } = {}) => Type.Array(PrizeInputSchema, { maxItems: MAX_PRIZES, ...extra });

export const ExperienceCreateSchema = Type.Object(
  {
    name,
    title,
    active: Type.Optional(Type.Boolean({ default: true })),
    events: Type.Optional(events({ default: [] })),
    prizes: Type.Optional(prizes({ default: [] })),
    ...READ_ONLY_MEMBERS,
  },
  {
    additionalProperties: false,
    title: 'ExperienceCreate',
    examples: [
      {
        name: 'summer-campaign',
        title: 'Summer campaign',
        events: ['purchase'],
        prizes: [
          { id: 'coupon-10', bucket: 'summer-coupons', title: '10 off your next order', description: 'a coupon for the next purchase', value: 10, kind: 'coupon', stock: 5000 },
          { id: 'beach-towel', bucket: 'summer-gifts', title: 'Beach towel', description: 'shipped to the customer', value: 25, kind: 'physical', stock: 0 },
        ],
      },
    ],
  },
);

/** PUT: every member optional; the ones sent replace, the ones omitted are kept. */
export const ExperienceUpdateSchema = Type.Object(
  {
    name: Type.Optional(name),
    title: Type.Optional(title),
    active: Type.Optional(Type.Boolean()),
    events: Type.Optional(events()),
    prizes: Type.Optional(prizes()),
    ...READ_ONLY_MEMBERS,
  },
  { additionalProperties: false, title: 'ExperienceUpdate', examples: [{ active: false }, { title: 'Summer campaign 2024', events: ['purchase', 'signup'] }] },
);

export interface PrizeInput {
  id: string;
  bucket: string;
  title: string;
  description?: string;
  value: number;
  quantity?: number;
  kind: PrizeKind;
  stock?: number | null;
}

export interface ExperienceUpdateInput {
  name?: string;
  title?: string;
  active?: boolean;
  events?: string[];
  prizes?: PrizeInput[];
}

export interface ExperienceCreateInput extends ExperienceUpdateInput {
  name: string;
  title: string;
}
