import type { TypedApp } from '../typed-app.js';
import { Type } from 'typebox';
import { IDS } from '../schemas/samples.js';
import { getAccount, type AccessChangeContext } from '../../services/accounts.js';

/** Who the token belongs to: lets a client check its credentials and scopes, and a console name the account. */
export async function meRoute(app: TypedApp, deps: Pick<AccessChangeContext, 'db'>): Promise<void> {
  app.get(
    '/me',
    {
      config: { scope: 'authenticated' },
      schema: {
        tags: ['oauth'],
        operationId: 'getMe',
        description:
          'Who the bearer token speaks for: the client id, its account (id and name) and the scopes the token carries (the `admin` scope marks the operator). The delivery rules in effect are at GET /delivery-policy.',
        summary: 'The authenticated client, its account and scopes',
        security: [{ bearerAuth: [] }],
        response: {
          200: Type.Object(
            {
              clientId: Type.String(),
              accountId: Type.String(),
              accountName: Type.String({ description: "the account's name, as the operator gave it" }),
              scopes: Type.Array(Type.String()),
            },
            { title: 'Me', examples: [{ clientId: IDS.client, accountId: IDS.account, accountName: 'Acme Shop', scopes: ['subscriptions:read', 'subscriptions:write'] }] },
          ),
        },
      },
    },
    async (request) => {
      const account = await getAccount(deps.db, request.auth.accountId);
      return { clientId: request.auth.clientId, accountId: request.auth.accountId, accountName: account.name, scopes: request.auth.scopes };
    },
  );
}
