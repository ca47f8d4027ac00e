import type { TypedApp } from '../typed-app.js';
import { Type } from 'typebox';
import { IDS } from '../schemas/samples.js';

/** Who the token belongs to: lets a client check its credentials and scopes. */
export async function meRoute(app: TypedApp): Promise<void> {
  app.get(
    '/me',
    {
      config: { scope: 'authenticated' },
      schema: {
        tags: ['oauth'],
        operationId: 'getMe',
        description:
          'Who the bearer token speaks for: the client id, its account and the scopes the token carries (the `admin` scope marks the operator). The delivery rules in effect are at GET /delivery-policy.',
        summary: 'The authenticated client, its account and scopes',
        security: [{ bearerAuth: [] }],
        response: {
          200: Type.Object(
            { clientId: Type.String(), accountId: Type.String(), scopes: Type.Array(Type.String()) },
            { title: 'Me', examples: [{ clientId: IDS.client, accountId: IDS.account, scopes: ['subscriptions:read', 'subscriptions:write'] }] },
          ),
        },
      },
    },
    async (request) => ({ clientId: request.auth.clientId, accountId: request.auth.accountId, scopes: request.auth.scopes }),
  );
}
