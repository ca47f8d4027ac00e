import type { TypedApp } from '../typed-app.js';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { createExperience, getExperience, listExperiences, removeExperience, updateExperience, type ExperiencesContext } from '../../services/experiences.js';
import { notFound } from '../../domain/errors.js';
import { ActingAccountQuerySchema, ExperienceCreateSchema, ExperienceParamsSchema, ExperienceSchema, ExperienceUpdateSchema, experienceToJson } from '../schemas/experience.js';
import { answerList, ListOrPage, PageQueryProperties, PAGING_NOTE } from '../schemas/paging.js';

const ADMIN = {
  tags: ['admin'],
  security: [{ bearerAuth: [] }],
  querystring: ActingAccountQuerySchema,
};
const ACCOUNT_NOTE = "Experiences belong to the account named by `?accountId=`; without it, to the operator's own account.";

/** Where the new experience can be read back: keeps `?accountId=` when the operator acts for an account. */
function locationOf(request: FastifyRequest, id: string): string {
  const path = `${request.url.split('?')[0]}/${id}`;
  const { accountId, tokenAccountId } = request.auth;
  return accountId === tokenAccountId ? path : `${path}?accountId=${encodeURIComponent(accountId)}`;
}

/** Operator only: experiences (campaigns) and their prizes, per account. */
export async function adminExperiencesRoutes(app: TypedApp, deps: ExperiencesContext): Promise<void> {
  app.get(
    '/admin/experiences',
    {
      config: { scope: 'admin' },
      schema: {
        ...ADMIN,
        operationId: 'listExperiences',
        summary: "List an account's experiences",
        description: `${ACCOUNT_NOTE} ${PAGING_NOTE}`,
        querystring: Type.Object({ ...ActingAccountQuerySchema.properties, ...PageQueryProperties }),
        response: { 200: ListOrPage(ExperienceSchema) },
      },
    },
    async (request) =>
      answerList(
        request.query,
        (page) => listExperiences(deps.db, request.auth.accountId, page),
        (experience) => experience.id,
        experienceToJson,
      ),
  );

  app.post(
    '/admin/experiences',
    {
      config: { scope: 'admin', problems: { 409: 'an experience with that name already exists in the account' } },
      schema: {
        ...ADMIN,
        operationId: 'createExperience',
        summary: 'Create an experience with its prizes',
        description: `${ACCOUNT_NOTE} The name is unique per account (409). A prize without stock is unlimited.`,
        body: ExperienceCreateSchema,
        response: { 201: ExperienceSchema },
      },
    },
    async (request, reply) => {
      const experience = await createExperience(deps.db, request.auth.accountId, request.body, deps.clock());
      return reply.code(201).header('location', locationOf(request, experience.id)).send(experienceToJson(experience));
    },
  );

  app.get(
    '/admin/experiences/:id',
    {
      config: { scope: 'admin' },
      schema: { ...ADMIN, operationId: 'getExperience', summary: 'One experience', description: ACCOUNT_NOTE, params: ExperienceParamsSchema, response: { 200: ExperienceSchema } },
    },
    async (request) => {
      return experienceToJson(await getExperience(deps.db, request.auth.accountId, request.params.id));
    },
  );

  app.put(
    '/admin/experiences/:id',
    {
      config: { scope: 'admin', problems: { 409: 'an experience with that name already exists in the account' } },
      schema: {
        ...ADMIN,
        operationId: 'updateExperience',
        summary: 'Replace the members given; keep the ones omitted',
        description:
          `${ACCOUNT_NOTE} \`prizes\`, when given, replaces the whole list. A prize whose id was already in the list and whose ` +
          '`stock` is omitted keeps its remaining stock; a new prize without `stock` is unlimited.',
        params: ExperienceParamsSchema,
        body: ExperienceUpdateSchema,
        response: { 200: ExperienceSchema },
      },
    },
    async (request) => {
      const experience = await updateExperience(deps.db, request.auth.accountId, request.params.id, request.body, deps.clock());
      return experienceToJson(experience);
    },
  );

  app.delete(
    '/admin/experiences/:id',
    {
      config: { scope: 'admin', problems: { 409: 'this experience is still in use, so it cannot be deleted; switch it off instead (`active: false`)' } },
      schema: { ...ADMIN, operationId: 'deleteExperience', summary: 'Delete an experience and its prizes', description: ACCOUNT_NOTE, params: ExperienceParamsSchema, response: { 204: Type.Null() } },
    },
    async (request, reply) => {
      if (!(await removeExperience(deps.db, request.auth.accountId, request.params.id))) throw notFound('experience');
      return reply.code(204).send(null);
    },
  );
}
