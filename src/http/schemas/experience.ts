import { Type } from 'typebox';
import type { Experience } from '../../domain/experiences/experience.js';
import { iso } from '../../domain/time.js';
import { SAMPLE_EXPERIENCE } from './samples.js';

export { ExperienceCreateSchema, ExperienceUpdateSchema } from '../../domain/experiences/experience-schema.js';

const PrizeSchema = Type.Object(
  {
    id: Type.String(),
    bucket: Type.String(),
    title: Type.String(),
    description: Type.String(),
    value: Type.Number(),
    quantity: Type.Integer(),
    kind: Type.Union([Type.Literal('coupon'), Type.Literal('payment'), Type.Literal('physical')]),
    stock: Type.Union([Type.Integer(), Type.Null()], { description: 'units left; null = unlimited' }),
  },
  { title: 'Prize' },
);

export const ExperienceSchema = Type.Object(
  {
    id: Type.String(),
    accountId: Type.String(),
    name: Type.String(),
    title: Type.String(),
    active: Type.Boolean(),
    events: Type.Array(Type.String()),
    prizes: Type.Array(PrizeSchema),
    createdAt: Type.String({ format: 'date-time' }),
    updatedAt: Type.String({ format: 'date-time' }),
  },
  { title: 'Experience', examples: [SAMPLE_EXPERIENCE] },
);

export const ExperienceParamsSchema = Type.Object({ id: Type.String({ maxLength: 200 }) });

export const ActingAccountQuerySchema = Type.Object({
  accountId: Type.Optional(Type.String({ description: "the account the experience belongs to; default: the operator's own account" })),
});

/** The API representation: times as ISO 8601 UTC, like every date in the seed contract. */
export function experienceToJson(experience: Experience) {
  return { ...experience, createdAt: iso(experience.createdAt), updatedAt: iso(experience.updatedAt) };
}
