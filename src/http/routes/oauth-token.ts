import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { OAuthError } from '../../domain/tokens/oauth-errors.js';
import { DomainError } from '../../domain/errors.js';
import { IDS } from '../schemas/samples.js';
import type { ClientAddress } from '../client-address.js';
import { JSON_CONTENT_TYPE, oauthErrorResponse, serverErrorResponse, TOKEN_BODY_LIMIT, type TokenEndpoint, type TokenEndpointVersion, type TokenHttpResponse } from '../token-endpoint.js';

/**
 * POST /v1|v2/oauth/token as Fastify routes. In a listening server the exact paths are answered
 * by the server's fast path before Fastify (token-fast-path.ts); these routes serve everything
 * else that reaches the endpoint (a trailing slash, a query string, `inject`) and document it in
 * the OpenAPI description. Both hand the raw body to the same TokenEndpoint.
 */

const SAMPLE_CLIENT_ID = IDS.client;
/** An access token as the service issues one (access-tokens.ts), for the example client; its signature is made up. */
const segment = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
const SAMPLE_ACCESS_TOKEN = [
  segment({ alg: 'EdDSA', typ: 'at+jwt', kid: IDS.signingKey }),
  segment({
    iss: 'https://rewards.example.com',
    sub: IDS.client,
    aud: 'https://rewards.example.com',
    exp: 1719838800,
    iat: 1719835200,
    jti: '5b0c8a9e-3f1d-4c2a-9e7b-2d4f6a8c0e13',
    client_id: IDS.client,
    scope: 'subscriptions:read subscriptions:write',
    account_id: IDS.account,
  }),
  Buffer.alloc(64, 0x5a).toString('base64url'),
].join('.');

const TokenResponseSchema = Type.Object(
  {
    access_token: Type.String(),
    token_type: Type.Literal('Bearer'),
    expires_in: Type.Integer({ description: 'lifetime in seconds' }),
    scope: Type.Optional(Type.String({ description: 'granted scopes (v2)' })),
  },
  {
    title: 'TokenResponse',
    examples: [{ access_token: SAMPLE_ACCESS_TOKEN, token_type: 'Bearer', expires_in: 3600, scope: 'subscriptions:read subscriptions:write' }],
  },
);
const TokenErrorSchema = Type.Object(
  { error: Type.String(), error_description: Type.Optional(Type.String()) },
  {
    title: 'TokenError',
    description: 'an RFC 6749 §5.2 error',
    examples: [
      { error: 'invalid_client', error_description: 'the client id or secret is wrong; check both, or ask the operator for a new secret' },
      {
        error: 'invalid_scope',
        error_description: 'unknown scope: request:write (did you mean requests:write?); this client may ask for: subscriptions:read requests:write (space-separated)',
      },
    ],
  },
);

/** One error answer of the endpoint, as the OpenAPI document lists it: an RFC 6749 body with its own example. */
const tokenError = (description: string, error: string, errorDescription: string) => ({
  description,
  content: { 'application/json': { schema: TokenErrorSchema, example: { error, error_description: errorDescription } } },
});

/**
 * Every error status the endpoint answers (oauth-errors.ts, token-endpoint.ts), listed one by one:
 * a range such as `4XX` leaves generated clients without a status type (orval writes `status: 4XX`,
 * which does not compile).
 */
const tokenErrors = (version: TokenEndpointVersion) => ({
  400: tokenError(
    version === 2
      ? 'invalid_request (a parameter missing, repeated or malformed, another Content-Type than a form), unsupported_grant_type, invalid_scope, invalid_grant (a console link code used, expired or unknown) or unauthorized_client (the client holds no scope)'
      : 'invalid_request (a member missing or malformed, another Content-Type than JSON) or unauthorized_client (the client holds no scope)',
    'invalid_request',
    'client_secret is required',
  ),
  401: tokenError(
    'invalid_client: the client id or secret is wrong, or the client or its account is deactivated (with `WWW-Authenticate: Basic` when the credentials came as HTTP Basic)',
    'invalid_client',
    'the client id or secret is wrong; check both, or ask the operator for a new secret',
  ),
  413: tokenError(`invalid_request: the body is larger than ${TOKEN_BODY_LIMIT / 1024} KiB`, 'invalid_request', 'request body too large'),
  429: tokenError(
    'temporarily_unavailable: too many failed authentication attempts from this address; retry after `Retry-After` seconds',
    'temporarily_unavailable',
    'too many failed authentication attempts; retry later',
  ),
  503: tokenError(
    'temporarily_unavailable: the database is unavailable right now; nothing was issued, retry after `Retry-After` seconds',
    'temporarily_unavailable',
    'the service cannot reach its database right now; retry later',
  ),
});

const FORM_BODY = Type.Object(
  {
    grant_type: Type.Optional(Type.String({ description: "`client_credentials`, or `urn:rewards:params:oauth:grant-type:console-link` to exchange a console link's code" })),
    client_id: Type.Optional(Type.String()),
    client_secret: Type.Optional(Type.String()),
    scope: Type.Optional(Type.String({ description: 'client_credentials: required; console-link: optional, a subset of the scopes the link grants' })),
    code: Type.Optional(Type.String({ description: 'console-link grant: the one-time code from the fragment of the console link (`#link=…`); single use, valid 10 minutes' })),
  },
  {
    additionalProperties: true,
    // The seed contract's sample: the client_credentials grant with a scope.
    title: 'TokenRequest',
    examples: [{ grant_type: 'client_credentials', client_id: SAMPLE_CLIENT_ID, client_secret: 'my-client-secret', scope: 'subscriptions:read subscriptions:write' }],
  },
);
const JSON_BODY = Type.Object(
  { client_id: Type.Optional(Type.String()), client_secret: Type.Optional(Type.String()) },
  { additionalProperties: true, title: 'TokenRequestV1', examples: [{ client_id: SAMPLE_CLIENT_ID, client_secret: 'my-client-secret' }] },
);

const TokenResponseV1Schema = Type.Omit(TokenResponseSchema, ['scope'], { title: 'TokenResponseV1', examples: [{ access_token: SAMPLE_ACCESS_TOKEN, token_type: 'Bearer', expires_in: 3600 }] });

function send(reply: FastifyReply, response: TokenHttpResponse): FastifyReply {
  // A string with its content type set is sent as it is: the response schemas only document it.
  return reply.code(response.status).headers(response.headers).type(JSON_CONTENT_TYPE).send(response.body);
}

/** Fastify's own refusals (a body over the limit, a broken stream) as RFC 6749 bodies, never problem+json. */
function toOAuthError(error: FastifyError): OAuthError | undefined {
  if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return new OAuthError('invalid_request', 'request body too large', 413);
  // The app-wide request checks (a NUL in the URL) answer problems; here they are RFC 6749 errors.
  if (error instanceof DomainError && error.kind !== 'unavailable') return new OAuthError('invalid_request', error.message);
  if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) return new OAuthError('invalid_request', 'request body is malformed');
  return undefined;
}

async function tokenRoute(app: FastifyInstance, endpoint: TokenEndpoint, addresses: ClientAddress, version: TokenEndpointVersion): Promise<void> {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const oauthError = toOAuthError(error);
    if (oauthError) return send(reply, oauthErrorResponse(oauthError));
    request.log.error({ err: error }, 'token request failed');
    return send(reply, serverErrorResponse());
  });
  // Every body arrives as text: the endpoint checks the content type and parses it itself.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string', bodyLimit: TOKEN_BODY_LIMIT }, (_request, body, done) => done(null, body));
  app.post(
    '/oauth/token',
    {
      // The schemas document the endpoint; validating is the endpoint's job (it answers RFC 6749 errors).
      validatorCompiler: () => () => true,
      schema:
        version === 2
          ? {
              tags: ['oauth'],
              operationId: 'createToken',
              summary: "Obtain an access token (client credentials, or a console link's code)",
              description:
                '`grant_type=client_credentials`: the client authenticates with `client_secret_post` or `client_secret_basic` and names the `scope` it wants. ' +
                '`grant_type=urn:rewards:params:oauth:grant-type:console-link&code=…`: exchanges the one-time code of a console link ' +
                "(`POST /v2/admin/accounts/{id}/console-links`, `rewards console link`) once, with no client authentication, for a token of the link's account " +
                "with every scope except admin (or the `scope` asked, a subset), living the link's ttl; a used, expired or unknown code is `invalid_grant`.",
              consumes: ['application/x-www-form-urlencoded'],
              body: FORM_BODY,
              response: { 200: TokenResponseSchema, ...tokenErrors(2) },
            }
          : {
              tags: ['oauth'],
              operationId: 'createToken',
              summary: 'Obtain an access token (v1, JSON body)',
              description:
                'Version 1 of the token endpoint: a JSON body `{client_id, client_secret}`, no grant_type or scope; the token carries every scope the client is allowed. Errors are RFC 6749 §5.2 bodies.',
              body: JSON_BODY,
              response: { 200: TokenResponseV1Schema, ...tokenErrors(1) },
            },
    },
    async (request: FastifyRequest, reply) =>
      send(
        reply,
        await endpoint({
          version,
          contentType: request.headers['content-type'],
          authorization: request.headers.authorization,
          body: typeof request.body === 'string' ? request.body : '',
          // As the server's fast path decides it (TRUST_PROXY), so both count failures alike.
          sourceAddress: addresses.ofRequest(request.raw),
        }),
      ),
  );
}

/** POST /v2/oauth/token: form body, client_secret_post or client_secret_basic. */
export const tokenRouteV2 = (app: FastifyInstance, endpoint: TokenEndpoint, addresses: ClientAddress) => tokenRoute(app, endpoint, addresses, 2);

/** POST /v1/oauth/token: JSON `{client_id, client_secret}`; the token carries every allowed scope. */
export const tokenRouteV1 = (app: FastifyInstance, endpoint: TokenEndpoint, addresses: ClientAddress) => tokenRoute(app, endpoint, addresses, 1);
