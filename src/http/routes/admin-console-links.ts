import type { TypedApp } from '../typed-app.js';
import { Type } from 'typebox';
import type { AppDeps } from '../../deps.js';
import { createConsoleLink, parseConsoleTokenTtl } from '../../services/console-links.js';
import { findAccountById } from '../../storage/repositories/accounts.js';
import { AccountParamsSchema } from '../schemas/admin.js';

const ConsoleLinkCreateSchema = Type.Object(
  { ttl: Type.Optional(Type.String({ maxLength: 20, description: 'lifetime of the token the link grants: `30m`, `1h` (default), at most `24h`' })) },
  { additionalProperties: false, examples: [{ ttl: '30m' }, {}] },
);

const ConsoleLinkSchema = Type.Object({
  url: Type.String({ description: '`PUBLIC_URL/console/#link=CODE`: the code is in the fragment, so it never reaches a server log' }),
  expiresAt: Type.String({ format: 'date-time', description: 'the code can be exchanged until then (10 minutes), once' }),
  tokenTtlSeconds: Type.Integer({ description: 'lifetime of the access token the code grants' }),
}, { examples: [{ url: 'https://rewards.example.com/console/#link=k3Yv9QeT1mZ8rB4wN6xP2cL7dH5sJ0aFgUiOqEtRyWc', expiresAt: '2024-07-01T12:10:00.000Z', tokenTtlSeconds: 1800 }] });

/** Operator only: a one-time sign-in link to the console for one account (docs/console.md). */
export async function adminConsoleLinksRoutes(app: TypedApp, deps: AppDeps): Promise<void> {
  app.post(
    '/admin/accounts/:id/console-links',
    {
      config: { scope: 'admin', secretBearing: true, problems: { 409: 'the account is inactive' } },
      // The body is optional: no body at all means the default ttl.
      preValidation: async (request) => {
        request.body ??= {};
      },
      schema: {
        tags: ['admin'],
        security: [{ bearerAuth: [] }],
        operationId: 'createConsoleLink',
        summary: 'Make a one-time console sign-in link for an account',
        description:
          'The URL carries a one-time code (256 bits, single use, valid 10 minutes; only its SHA-256 is stored) in its fragment. ' +
          'The console exchanges it at `POST /v2/oauth/token` with `grant_type=urn:rewards:params:oauth:grant-type:console-link` ' +
          'for an access token of the account with every scope except admin, living `ttl` (default 1h, at most 24h). ' +
          '`404` for an unknown account, `409` for an inactive one.',
        params: AccountParamsSchema,
        body: ConsoleLinkCreateSchema,
        response: { 201: ConsoleLinkSchema },
      },
    },
    async (request, reply) => {
      const ttlMs = parseConsoleTokenTtl(request.body.ttl, 'body.ttl');
      const link = await createConsoleLink(deps, await findAccountById(deps.db, request.params.id), ttlMs);
      // The URL is a credential until it is used: never cached (secretBearing).
      return reply.code(201).send(link);
    },
  );
}
