import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { OAuthError } from '../../domain/tokens/oauth-errors.js';
import { HttpProblem } from '../problem.js';
import type { ClientAddress } from '../client-address.js';
import { JSON_CONTENT_TYPE, oauthErrorResponse, serverErrorResponse, TOKEN_BODY_LIMIT, type TokenEndpoint, type TokenEndpointVersion, type TokenHttpResponse } from '../token-endpoint.js';

/**
 * POST /v1|v2/oauth/token as Fastify routes. In a listening server the exact paths are answered
 * by the server's fast path before Fastify (token-fast-path.ts); these routes serve everything
 * else that reaches the endpoint (a trailing slash, a query string, `inject`) and document it in
 * the OpenAPI description. Both hand the raw body to the same TokenEndpoint.
 */

const SAMPLE_ACCESS_TOKEN = 'eyJhbGciOiJFZERTQSIsInR5cCI6ImF0K2p3dCJ9.eyJzdWIiOiJjbGlfMDFqOXozazh3MCJ9.c2lnbmF0dXJl';

const TokenResponseSchema = Type.Object(
  {
    access_token: Type.String(),
    token_type: Type.Literal('Bearer'),
    expires_in: Type.Integer({ description: 'lifetime in seconds' }),
    scope: Type.Optional(Type.String({ description: 'granted scopes (v2)' })),
  },
  {
    $id: 'TokenResponse',
    examples: [{ access_token: SAMPLE_ACCESS_TOKEN, token_type: 'Bearer', expires_in: 3600, scope: 'subscriptions:read subscriptions:write' }],
  },
);
const TokenErrorSchema = Type.Object(
  { error: Type.String(), error_description: Type.Optional(Type.String()) },
  { examples: [{ error: 'invalid_client', error_description: 'the client id or secret is wrong; check both, or ask the operator for a new secret' }, { error: 'invalid_scope', error_description: 'scope not allowed for this client: admin' }] },
);

const FORM_BODY = Type.Object(
  {
    grant_type: Type.Optional(Type.String({ description: '`client_credentials`, or `urn:rewards:params:oauth:grant-type:console-link` to exchange a console link\'s code' })),
    client_id: Type.Optional(Type.String()),
    client_secret: Type.Optional(Type.String()),
    scope: Type.Optional(Type.String({ description: 'client_credentials: required; console-link: optional, a subset of the scopes the link grants' })),
    code: Type.Optional(Type.String({ description: 'console-link grant: the one-time code from the fragment of the console link (`#link=…`); single use, valid 10 minutes' })),
  },
  {
    additionalProperties: true,
    // The seed contract's sample: the client_credentials grant with a scope.
    examples: [{ grant_type: 'client_credentials', client_id: 'cli_01j9z3k8w0a1b2c3d4e5f6g7h8', client_secret: 'my-client-secret', scope: 'subscriptions:read subscriptions:write' }],
  },
);
const JSON_BODY = Type.Object(
  { client_id: Type.Optional(Type.String()), client_secret: Type.Optional(Type.String()) },
  { additionalProperties: true, examples: [{ client_id: 'cli_01j9z3k8w0a1b2c3d4e5f6g7h8', client_secret: 'my-client-secret' }] },
);

function send(reply: FastifyReply, response: TokenHttpResponse): FastifyReply {
  // A string with its content type set is sent as it is: the response schemas only document it.
  return reply.code(response.status).headers(response.headers).type(JSON_CONTENT_TYPE).send(response.body);
}

/** Fastify's own refusals (a body over the limit, a broken stream) as RFC 6749 bodies, never problem+json. */
function toOAuthError(error: FastifyError): OAuthError | undefined {
  if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return new OAuthError('invalid_request', 'request body too large', 413);
  // The app-wide request checks (a NUL in the URL) answer problems; here they are RFC 6749 errors.
  if (error instanceof HttpProblem && error.status < 500) return new OAuthError('invalid_request', error.detail);
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
              summary: 'Obtain an access token (client credentials, or a console link\'s code)',
              description:
                '`grant_type=client_credentials`: the client authenticates with `client_secret_post` or `client_secret_basic` and names the `scope` it wants. ' +
                '`grant_type=urn:rewards:params:oauth:grant-type:console-link&code=…`: exchanges the one-time code of a console link ' +
                '(`POST /v2/admin/accounts/{id}/console-links`, `rewards console link`) once, with no client authentication, for a token of the link\'s account ' +
                'with every scope except admin (or the `scope` asked, a subset), living the link\'s ttl; a used, expired or unknown code is `invalid_grant`.',
              consumes: ['application/x-www-form-urlencoded'],
              body: FORM_BODY,
              response: { 200: TokenResponseSchema, '4xx': TokenErrorSchema },
            }
          : {
              tags: ['oauth'],
              operationId: 'createToken',
              summary: 'Obtain an access token (v1, JSON body)',
              description: 'Version 1 of the token endpoint: a JSON body `{client_id, client_secret}`, no grant_type or scope; the token carries every scope the client is allowed. Errors are RFC 6749 §5.2 bodies.',
              body: JSON_BODY,
              response: { 200: Type.Omit(TokenResponseSchema, ['scope'], { examples: [{ access_token: SAMPLE_ACCESS_TOKEN, token_type: 'Bearer', expires_in: 3600 }] }), '4xx': TokenErrorSchema },
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
