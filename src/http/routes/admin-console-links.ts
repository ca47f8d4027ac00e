import type { TypedApp } from '../typed-app.js';
import { Type } from 'typebox';
import type { Config } from '../../config.js';
import { getAccount, type AccessChangeContext } from '../../services/accounts.js';
import { createConsoleLink, listConsoleLinks, parseConsoleTokenTtl, revokeConsoleLink } from '../../services/console-links.js';
import type { ConsoleLink } from '../../domain/tokens/console-link.js';
import { iso } from '../../domain/time.js';
import { AccountParamsSchema } from '../schemas/admin.js';
import { IDS } from '../schemas/samples.js';
import { answerList, ListOrPage, PageQueryProperties, PAGING_NOTE } from '../schemas/paging.js';

const ConsoleLinkCreateSchema = Type.Object(
  { ttl: Type.Optional(Type.String({ maxLength: 20, description: 'lifetime of the token the link grants: `30m`, `1h` (default), at most `24h`' })) },
  { additionalProperties: false, title: 'ConsoleLinkCreate', examples: [{ ttl: '30m' }, {}] },
);

const ConsoleLinkParamsSchema = Type.Object({ id: Type.String({ maxLength: 200 }), linkId: Type.String({ maxLength: 200 }) });

const ConsoleLinkSchema = Type.Object(
  {
    id: Type.String({ description: 'the link (`cln_…`): `DELETE …/console-links/{linkId}` revokes it and the session it opened' }),
    url: Type.String({ description: '`PUBLIC_URL/console/#link=CODE`: the code is in the fragment, so it never reaches a server log' }),
    expiresAt: Type.String({ format: 'date-time', description: 'the code can be exchanged until then (10 minutes), once' }),
    tokenTtlSeconds: Type.Integer({ description: 'lifetime of the access token the code grants' }),
  },
  {
    title: 'CreatedConsoleLink',
    description: 'a console link as created: with its URL, shown this once',
    examples: [
      {
        id: 'cln_01j1z9x8w7v6t5s4r3q2p1n0mk',
        url: 'https://rewards.example.com/console/#link=k3Yv9QeT1mZ8rB4wN6xP2cL7dH5sJ0aFgUiOqEtRyWc',
        expiresAt: '2024-07-01T12:10:00.000Z',
        tokenTtlSeconds: 1800,
      },
    ],
  },
);

const nullableTime = (description: string) => Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description });

/** A link as the operator reviews it: never its code (only its hash is stored). */
const ConsoleLinkStateSchema = Type.Object(
  {
    id: Type.String(),
    accountId: Type.String(),
    createdAt: Type.String({ format: 'date-time' }),
    expiresAt: Type.String({ format: 'date-time', description: 'the code could be exchanged until then' }),
    tokenTtlSeconds: Type.Integer({ description: 'lifetime of the session the code opens' }),
    usedAt: nullableTime('when the code was exchanged (the session began); null while unused'),
    sessionExpiresAt: nullableTime("when the session's token expires; null while unused"),
    revokedAt: nullableTime('when an operator revoked the link; null unless revoked'),
  },
  {
    title: 'ConsoleLink',
    examples: [
      {
        id: 'cln_01j1z9x8w7v6t5s4r3q2p1n0mk',
        accountId: IDS.account,
        createdAt: '2024-07-01T12:00:00.000Z',
        expiresAt: '2024-07-01T12:10:00.000Z',
        tokenTtlSeconds: 1800,
        usedAt: '2024-07-01T12:02:00.000Z',
        sessionExpiresAt: '2024-07-01T12:32:00.000Z',
        revokedAt: null,
      },
    ],
  },
);

function consoleLinkToJson(link: ConsoleLink) {
  return {
    id: link.id,
    accountId: link.accountId,
    createdAt: iso(link.createdAt),
    expiresAt: iso(link.expiresAt),
    tokenTtlSeconds: Math.floor(link.tokenTtlMs / 1000),
    usedAt: link.usedAt === null ? null : iso(link.usedAt),
    sessionExpiresAt: link.usedAt === null ? null : iso(link.usedAt + link.tokenTtlMs),
    revokedAt: link.revokedAt === null ? null : iso(link.revokedAt),
  };
}

interface AdminConsoleLinksRouteDeps extends AccessChangeContext {
  config: Pick<Config, 'publicUrl'>;
}

/** Operator only: a one-time sign-in link to the console for one account (docs/console.md). */
export async function adminConsoleLinksRoutes(app: TypedApp, deps: AdminConsoleLinksRouteDeps): Promise<void> {
  app.post(
    '/admin/accounts/:id/console-links',
    {
      config: { scope: 'admin', secretBearing: true, optionalBody: true, problems: { 409: 'the account is inactive' } },
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
      const link = await createConsoleLink(deps, request.params.id, ttlMs);
      // The URL is a credential until it is used: never cached (secretBearing).
      return reply
        .code(201)
        .header('location', `${request.url.split('?')[0]}/${link.id}`)
        .send(link);
    },
  );

  app.get(
    '/admin/accounts/:id/console-links',
    {
      config: { scope: 'admin' },
      schema: {
        tags: ['admin'],
        security: [{ bearerAuth: [] }],
        operationId: 'listConsoleLinks',
        summary: "List an account's console links (who was let in, and when)",
        description: `Operators only (\`admin\`). Never a code. Links stay 30 days after their code expired. ${PAGING_NOTE}`,
        params: AccountParamsSchema,
        querystring: Type.Object(PageQueryProperties),
        response: { 200: ListOrPage(ConsoleLinkStateSchema) },
      },
    },
    async (request) => {
      const account = await getAccount(deps.db, request.params.id);
      return answerList(
        request.query,
        (page) => listConsoleLinks(deps.db, account.id, page),
        (link) => link.id,
        consoleLinkToJson,
      );
    },
  );

  app.delete(
    '/admin/accounts/:id/console-links/:linkId',
    {
      config: { scope: 'admin' },
      schema: {
        tags: ['admin'],
        security: [{ bearerAuth: [] }],
        operationId: 'revokeConsoleLink',
        summary: 'Revoke a console link and the session it opened',
        description:
          'Operators only (`admin`). An unused code can no longer be exchanged (`invalid_grant`), and the token the link granted gets ' +
          '401 invalid_token within AUTH_REFRESH_INTERVAL (2 s by default) on every process. Revoking a revoked link is a 204 too; ' +
          'a link of another account under this path is a 404. The link stays listed, with `revokedAt`.',
        params: ConsoleLinkParamsSchema,
        response: { 204: Type.Null() },
      },
    },
    async (request, reply) => {
      await revokeConsoleLink(deps, request.params.id, request.params.linkId);
      return reply.code(204).send(null);
    },
  );
}
