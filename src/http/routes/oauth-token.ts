import formbody from '@fastify/formbody';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { grantClientCredentials, type TokenRequest } from '../../domain/tokens/client-credentials.js';
import { OAuthError } from '../../domain/tokens/oauth-errors.js';
import type { AppDeps } from '../../app.js';
import { REALM } from '../plugins/auth.js';
import { HttpProblem } from '../problem.js';

const TokenResponseSchema = Type.Object(
  {
    access_token: Type.String(),
    token_type: Type.Literal('Bearer'),
    expires_in: Type.Integer({ description: 'lifetime in seconds' }),
    scope: Type.Optional(Type.String({ description: 'granted scopes (v2)' })),
  },
  { $id: 'TokenResponse' },
);
const TokenErrorSchema = Type.Object({ error: Type.String(), error_description: Type.Optional(Type.String()) });

const FORM_BODY = Type.Object(
  {
    grant_type: Type.Optional(Type.String()),
    client_id: Type.Optional(Type.String()),
    client_secret: Type.Optional(Type.String()),
    scope: Type.Optional(Type.String()),
  },
  { additionalProperties: true },
);

/** RFC 6749 §2.3.1: the Basic credentials are form-urlencoded before base64. */
function parseBasic(header: string): { id: string; secret: string } {
  const encoded = /^Basic +([A-Za-z0-9+/]+=*) *$/i.exec(header)?.[1];
  const decoded = encoded ? Buffer.from(encoded, 'base64').toString('utf8') : '';
  const colon = decoded.indexOf(':');
  if (colon < 0) throw basicFailure('malformed Basic credentials');
  const formDecode = (text: string) => decodeURIComponent(text.replaceAll('+', ' '));
  try {
    return { id: formDecode(decoded.slice(0, colon)), secret: formDecode(decoded.slice(colon + 1)) };
  } catch {
    throw basicFailure('Basic credentials are not form-urlencoded');
  }
}

function basicFailure(description: string): OAuthError {
  const error = new OAuthError('invalid_client', description);
  error.usedBasicAuth = true;
  return error;
}

/** Reads one parameter; a repeated one is an `invalid_request` (RFC 6749 §3.2). */
function single(body: Record<string, unknown>, name: string): string | undefined {
  const value = body[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw new OAuthError('invalid_request', `parameter "${name}" must appear once, as a string`);
  return value;
}

function extractClientAuth(request: FastifyRequest, body: Record<string, unknown>): Pick<TokenRequest, 'clientId' | 'clientSecret' | 'usedBasicAuth'> {
  const header = request.headers.authorization;
  const bodyId = single(body, 'client_id');
  const bodySecret = single(body, 'client_secret');
  if (header !== undefined) {
    if (!/^Basic /i.test(header)) throw new OAuthError('invalid_request', 'only HTTP Basic client authentication is accepted in the Authorization header');
    const basic = parseBasic(header);
    if (bodySecret !== undefined) throw new OAuthError('invalid_request', 'use one client authentication method: Basic or client_secret in the body, not both');
    if (bodyId !== undefined && bodyId !== basic.id) throw new OAuthError('invalid_request', 'client_id in the body differs from the Basic credentials');
    return { clientId: basic.id, clientSecret: basic.secret, usedBasicAuth: true };
  }
  if (!bodyId) throw new OAuthError('invalid_request', 'client_id is required');
  if (!bodySecret) throw new OAuthError('invalid_request', 'client_secret is required');
  return { clientId: bodyId, clientSecret: bodySecret, usedBasicAuth: false };
}

function sendOAuthError(reply: FastifyReply, error: OAuthError): FastifyReply {
  if (error.status === 401 && error.usedBasicAuth) reply.header('www-authenticate', `Basic realm="${REALM}", charset="UTF-8"`);
  if (error.retryAfterSeconds !== undefined) reply.header('retry-after', String(error.retryAfterSeconds));
  return reply.code(error.status).send({ error: error.code, error_description: error.description });
}

/** Every failure of the token endpoint is an RFC 6749 §5.2 body, never problem+json. */
function toOAuthError(error: FastifyError | Error): OAuthError | undefined {
  if (error instanceof OAuthError) return error;
  // Schema validation arrives already formatted as a problem naming the parameter.
  if (error instanceof HttpProblem && error.status < 500) {
    const field = error.errors?.[0]?.path.replace(/^body\./, '').split('.')[0];
    return new OAuthError('invalid_request', field && field !== 'body' ? `parameter "${field}" must appear once, as a string` : 'request body is malformed');
  }
  const code = (error as FastifyError).code;
  if (code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return new OAuthError('invalid_request', 'unsupported Content-Type for this endpoint');
  if (code === 'FST_ERR_CTP_BODY_TOO_LARGE') return new OAuthError('invalid_request', 'request body too large', 413);
  const validation = (error as FastifyError).validation;
  if (validation) {
    const field = validation[0]?.instancePath.replace(/^\//, '').split('/')[0];
    return new OAuthError('invalid_request', field ? `parameter "${field}" must appear once, as a string` : 'request body is malformed');
  }
  const status = (error as FastifyError).statusCode;
  if (status !== undefined && status >= 400 && status < 500) return new OAuthError('invalid_request', 'request body is malformed');
  return undefined;
}

/**
 * RFC 6749 §5.1: every token response, success or error, carries these. Set by the handlers and by
 * the scope's error handler (which sees every failure, parsing and validation included) rather than
 * by an onSend hook: a hook adds a hook run to each request, and this is the busiest public route.
 */
function noStore(reply: FastifyReply): FastifyReply {
  return reply.header('cache-control', 'no-store').header('pragma', 'no-cache');
}

function tokenScope(app: FastifyInstance, deps: AppDeps): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    noStore(reply);
    const oauthError = toOAuthError(error);
    if (oauthError) return sendOAuthError(reply, oauthError);
    request.log.error({ err: error }, 'token request failed');
    return reply.code(500).send({ error: 'server_error', error_description: 'an unexpected error occurred' });
  });
  void deps;
}

async function issue(deps: AppDeps, request: FastifyRequest, body: Record<string, unknown>, version: 1 | 2) {
  const auth = extractClientAuth(request, body);
  if (version === 2) {
    const grantType = single(body, 'grant_type');
    if (!grantType) throw new OAuthError('invalid_request', 'grant_type is required');
    if (grantType !== 'client_credentials') throw new OAuthError('unsupported_grant_type', `grant_type "${grantType}" is not supported; use client_credentials`);
  }
  const scope = version === 2 ? single(body, 'scope') : undefined;
  return grantClientCredentials(deps, { ...auth, sourceAddress: request.ip, scope, scopeRequired: version === 2 });
}

/** POST /v2/oauth/token: form body, client_secret_post or client_secret_basic. */
export async function tokenRouteV2(app: FastifyInstance, deps: AppDeps): Promise<void> {
  tokenScope(app, deps);
  app.removeAllContentTypeParsers();
  await app.register(formbody, { bodyLimit: 64 * 1024 });
  app.post(
    '/oauth/token',
    {
      schema: {
        tags: ['oauth'],
        summary: 'Obtain an access token (client credentials)',
        consumes: ['application/x-www-form-urlencoded'],
        body: FORM_BODY,
        response: { 200: TokenResponseSchema, '4xx': TokenErrorSchema },
      },
    },
    async (request, reply) => {
      noStore(reply);
      return issue(deps, request, (request.body ?? {}) as Record<string, unknown>, 2);
    },
  );
}

/** POST /v1/oauth/token: JSON `{client_id, client_secret}`; the token carries every allowed scope. */
export async function tokenRouteV1(app: FastifyInstance, deps: AppDeps): Promise<void> {
  tokenScope(app, deps);
  app.post(
    '/oauth/token',
    {
      schema: {
        tags: ['oauth'],
        summary: 'Obtain an access token (v1, JSON body)',
        body: Type.Object({ client_id: Type.Optional(Type.String()), client_secret: Type.Optional(Type.String()) }, { additionalProperties: true }),
        response: { 200: Type.Omit(TokenResponseSchema, ['scope']), '4xx': TokenErrorSchema },
      },
    },
    async (request, reply) => {
      noStore(reply);
      if (request.body === null || typeof request.body !== 'object' || Array.isArray(request.body)) {
        throw new OAuthError('invalid_request', 'body must be a JSON object');
      }
      const { access_token, token_type, expires_in } = await issue(deps, request, request.body as Record<string, unknown>, 1);
      return { access_token, token_type, expires_in };
    },
  );
}
