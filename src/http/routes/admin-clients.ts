import type { TypedApp } from '../typed-app.js';
import { Type } from 'typebox';
import { changeClient, clientScopes, createClient, deleteClient, getAccount, getAccountClient, listAccountClients, rotateClientSecret } from '../../services/accounts.js';
import { ADMIN, type AdminAccountsRouteDeps } from './admin-accounts.js';
import { AccountParamsSchema, ClientCreateSchema, ClientParamsSchema, ClientPatchSchema, ClientSchema, IssuedClientSchema, RotatedSecretSchema, clientToJson } from '../schemas/admin.js';
import { iso } from '../../domain/time.js';
import { answerList, ListOrPage, PageQueryProperties, PAGING_NOTE } from '../schemas/paging.js';

/** Operator only: the OAuth clients of an account. Secrets are shown once, at creation and rotation. */
export async function adminClientsRoutes(app: TypedApp, deps: AdminAccountsRouteDeps): Promise<void> {
  app.get(
    '/admin/accounts/:id/clients',
    {
      config: { scope: 'admin' },
      schema: {
        ...ADMIN,
        operationId: 'listClients',
        summary: "List an account's clients (never their secrets)",
        description: PAGING_NOTE,
        params: AccountParamsSchema,
        querystring: Type.Object(PageQueryProperties),
        response: { 200: ListOrPage(ClientSchema) },
      },
    },
    async (request) => {
      const account = await getAccount(deps.db, request.params.id);
      return answerList(
        request.query,
        (page) => listAccountClients(deps.db, account.id, page),
        (client) => client.clientId,
        clientToJson,
      );
    },
  );

  app.post(
    '/admin/accounts/:id/clients',
    {
      config: { scope: 'admin', secretBearing: true, optionalBody: true },
      schema: {
        ...ADMIN,
        operationId: 'createClient',
        summary: 'Create a client; its secret is shown once',
        description: 'Without `scopes` the client gets every scope except admin. Only operator-account clients may hold admin.',
        params: AccountParamsSchema,
        body: ClientCreateSchema,
        response: { 201: IssuedClientSchema },
      },
    },
    async (request, reply) => {
      const account = await getAccount(deps.db, request.params.id);
      const scopes = clientScopes(account, request.body.scopes, 'body.scopes');
      const issued = await createClient(deps.db, account.id, scopes, deps.clock());
      return reply
        .code(201)
        .header('location', `${request.url.split('?')[0]}/${issued.client.clientId}`)
        .send({ accountId: account.id, client_id: issued.client.clientId, client_secret: issued.clientSecret, scopes: issued.client.scopes.join(' ') });
    },
  );

  app.post(
    '/admin/accounts/:id/clients/:clientId/rotate-secret',
    {
      config: { scope: 'admin', secretBearing: true },
      schema: {
        ...ADMIN,
        operationId: 'rotateClientSecret',
        description: 'Operators only (`admin`). The new secret is in the response, once; the previous one keeps working for 24 hours so the client can switch without downtime.',
        summary: 'Issue a new secret; the previous one stays valid for 24 hours',
        params: ClientParamsSchema,
        response: { 200: RotatedSecretSchema },
      },
    },
    async (request) => {
      await getAccountClient(deps.db, request.params.id, request.params.clientId);
      const issued = await rotateClientSecret(deps.db, request.params.clientId, deps.clock());
      deps.clientCache.forget();
      return {
        client_id: issued.client.clientId,
        client_secret: issued.clientSecret,
        previous_secret_valid_until: iso(issued.client.previousSecretExpiresAt!),
      };
    },
  );

  app.patch(
    '/admin/accounts/:id/clients/:clientId',
    {
      config: { scope: 'admin' },
      schema: {
        ...ADMIN,
        operationId: 'updateClient',
        summary: '(De)activate a client or change its allowed scopes',
        description:
          'An inactive client gets invalid_client at the token endpoint, and the tokens already issued to it get 401 invalid_token within AUTH_REFRESH_INTERVAL (2 s by default) on every process. ' +
          'Reactivated, it gets new tokens; the tokens issued before stay refused.',
        params: ClientParamsSchema,
        body: ClientPatchSchema,
        response: { 200: ClientSchema },
      },
    },
    async (request) => {
      const account = await getAccount(deps.db, request.params.id);
      await getAccountClient(deps.db, account.id, request.params.clientId);
      const scopes = request.body.scopes === undefined ? undefined : clientScopes(account, request.body.scopes, 'body.scopes');
      const client = await changeClient(deps, request.params.clientId, { active: request.body.active, scopes });
      deps.clientCache.forget();
      return clientToJson(client);
    },
  );

  app.delete(
    '/admin/accounts/:id/clients/:clientId',
    {
      config: { scope: 'admin' },
      schema: {
        ...ADMIN,
        operationId: 'deleteClient',
        description:
          'Operators only (`admin`). The client cannot obtain tokens any more, and the tokens already issued to it get 401 invalid_token within AUTH_REFRESH_INTERVAL (2 s by default) on every process.',
        summary: 'Delete a client',
        params: ClientParamsSchema,
        response: { 204: Type.Null() },
      },
    },
    async (request, reply) => {
      await getAccountClient(deps.db, request.params.id, request.params.clientId);
      await deleteClient(deps, request.params.clientId);
      deps.clientCache.forget();
      return reply.code(204).send(null);
    },
  );
}
