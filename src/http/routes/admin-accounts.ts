import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { AppDeps } from '../../deps.js';
import { AccountsError, changeAccount, createAccount } from '../../domain/accounts/accounts-service.js';
import { isUniqueViolation } from '../../storage/database-errors.js';
import { findAccountById, listAccounts } from '../../storage/repositories/accounts.js';
import { HttpProblem, notFound } from '../problem.js';
import { AccountCreateSchema, AccountParamsSchema, AccountPatchSchema, AccountSchema, accountToJson } from '../schemas/admin.js';

const ADMIN = { tags: ['admin'], security: [{ bearerAuth: [] }] };

/** Turns the accounts service's errors into problems; `field` names the body member an `invalid` refers to. */
export function accountsProblem(error: unknown, field?: string): unknown {
  if (isUniqueViolation(error)) return new HttpProblem(409, 'an account with that name already exists');
  if (!(error instanceof AccountsError)) return error;
  if (error.kind === 'not_found') return new HttpProblem(404, error.message);
  if (error.kind === 'conflict') return new HttpProblem(409, error.message);
  return new HttpProblem(400, error.message, field ? [{ path: `body.${field}`, message: error.message }] : undefined);
}

/** Operator only: the client accounts of this deployment. */
export async function adminAccountsRoutes(app: FastifyInstance, deps: AppDeps): Promise<void> {
  app.get(
    '/admin/accounts',
    {
      config: { scope: 'admin' },
      schema: { ...ADMIN, summary: 'List accounts', response: { 200: Type.Array(AccountSchema) } },
    },
    async () => (await listAccounts(deps.db)).map(accountToJson),
  );

  app.post<{ Body: { name: string } }>(
    '/admin/accounts',
    {
      config: { scope: 'admin' },
      schema: { ...ADMIN, summary: 'Create an account', body: AccountCreateSchema, response: { 201: AccountSchema } },
    },
    async (request, reply) => {
      const account = await createAccount(deps.db, request.body.name, deps.clock()).catch((error) => {
        throw accountsProblem(error, 'name');
      });
      return reply.code(201).header('location', `${request.url.split('?')[0]}/${account.id}`).send(accountToJson(account));
    },
  );

  app.get<{ Params: { id: string } }>(
    '/admin/accounts/:id',
    {
      config: { scope: 'admin' },
      schema: { ...ADMIN, summary: 'One account', params: AccountParamsSchema, response: { 200: AccountSchema } },
    },
    async (request) => {
      const account = await findAccountById(deps.db, request.params.id);
      if (!account) throw notFound('account');
      return accountToJson(account);
    },
  );

  app.patch<{ Params: { id: string }; Body: { name?: string; active?: boolean } }>(
    '/admin/accounts/:id',
    {
      config: { scope: 'admin' },
      schema: {
        ...ADMIN,
        summary: 'Rename or (de)activate an account',
        description: 'Deactivating an account makes its clients get invalid_client at the token endpoint; tokens already issued stay valid until they expire.',
        params: AccountParamsSchema,
        body: AccountPatchSchema,
        response: { 200: AccountSchema },
      },
    },
    async (request) => {
      const account = await changeAccount(deps.db, request.params.id, request.body).catch((error) => {
        throw accountsProblem(error, 'name');
      });
      return accountToJson(account);
    },
  );
}
