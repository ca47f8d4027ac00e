import type { TypedApp } from '../typed-app.js';
import { Type } from 'typebox';
import { changeAccount, createAccount, getAccount, listAccounts, type AccessChangeContext } from '../../services/accounts.js';
import { answerList, ListOrPage, PageQueryProperties, PAGING_NOTE } from '../schemas/paging.js';
import { AccountCreateSchema, AccountParamsSchema, AccountPatchSchema, AccountSchema, accountToJson } from '../schemas/admin.js';

/** What every operator route's OpenAPI entry shares. */
export const ADMIN = { tags: ['admin'], security: [{ bearerAuth: [] }] };

/** The operator's routes over accounts and their clients: the use cases' context, and the token endpoint's cache of client rows. */
export interface AdminAccountsRouteDeps extends AccessChangeContext {
  /** The token endpoint's client rows: forgotten after a change, so it is seen at once. */
  clientCache: { forget(): void };
}

/** Operator only: the client accounts of this deployment. */
export async function adminAccountsRoutes(app: TypedApp, deps: AdminAccountsRouteDeps): Promise<void> {
  app.get(
    '/admin/accounts',
    {
      config: { scope: 'admin' },
      schema: {
        ...ADMIN,
        operationId: 'listAccounts',
        summary: 'List accounts',
        description: PAGING_NOTE,
        querystring: Type.Object(PageQueryProperties),
        response: { 200: ListOrPage(AccountSchema) },
      },
    },
    async (request) =>
      answerList(
        request.query,
        (page) => listAccounts(deps.db, page),
        (account) => account.id,
        accountToJson,
      ),
  );

  app.post(
    '/admin/accounts',
    {
      config: { scope: 'admin', problems: { 409: 'an account with that name already exists' } },
      schema: {
        ...ADMIN,
        operationId: 'createAccount',
        description: 'Operators only (`admin`). Account names are unique; a second account with the same name is a 409.',
        summary: 'Create an account',
        body: AccountCreateSchema,
        response: { 201: AccountSchema },
      },
    },
    async (request, reply) => {
      const account = await createAccount(deps.db, request.body.name, { now: deps.clock(), field: 'body.name' });
      return reply
        .code(201)
        .header('location', `${request.url.split('?')[0]}/${account.id}`)
        .send(accountToJson(account));
    },
  );

  app.get(
    '/admin/accounts/:id',
    {
      config: { scope: 'admin' },
      schema: { ...ADMIN, operationId: 'getAccount', description: 'Operators only (`admin`).', summary: 'One account', params: AccountParamsSchema, response: { 200: AccountSchema } },
    },
    async (request) => {
      return accountToJson(await getAccount(deps.db, request.params.id));
    },
  );

  app.patch(
    '/admin/accounts/:id',
    {
      config: { scope: 'admin', problems: { 409: 'an account with that name already exists, or the operator account cannot be deactivated' } },
      schema: {
        ...ADMIN,
        operationId: 'updateAccount',
        summary: 'Rename or (de)activate an account',
        description:
          "Deactivating an account makes its clients get invalid_client at the token endpoint, and every token already issued to it (its clients' and its console links') gets 401 invalid_token within AUTH_REFRESH_INTERVAL (2 s by default) on every process. " +
          'Its reward requests not registered yet are rejected (ACCOUNT_INACTIVE), those registered but not processed are processed with every prize canceled (reasonCode 3), and none of its notifications is sent while it is inactive. ' +
          'Reactivated, its clients get new tokens; the tokens issued before stay refused.',
        params: AccountParamsSchema,
        body: AccountPatchSchema,
        response: { 200: AccountSchema },
      },
    },
    async (request) => {
      const account = await changeAccount(deps, request.params.id, request.body, 'body.name');
      deps.clientCache.forget(); // an inactive account's clients get no tokens
      return accountToJson(account);
    },
  );
}
