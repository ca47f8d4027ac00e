import type { FastifySchema } from 'fastify';
import type { SwaggerTransform } from '@fastify/swagger';
import { SCOPES } from '../domain/tokens/scopes.js';
import { HttpProblem } from './problem.js';

/**
 * What the OpenAPI document says beyond each route's own schema, said once for every route
 * (README.md, "The OpenAPI document"): the `V1` operationIds of the /v1 copies, the
 * RFC 9457 problem responses a route can answer (from what the error plugin and the bearer check
 * really answer), `security: []` on public operations and the OAuth2 scope a route requires.
 * It only shapes the document: responses are serialized exactly as before.
 */

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Route-specific problems for the document, by status: `{ 409: 'the subscription is inactive' }`. */
    problems?: Partial<Record<number, string>>;
  }
}

export const PROBLEM_CONTENT = 'application/problem+json';

export const PROBLEM_SCHEMA = {
  type: 'object' as const,
  description: 'An RFC 9457 problem document',
  required: ['type', 'title', 'status', 'detail'],
  properties: {
    type: { type: 'string' as const, description: 'a URI naming the kind of problem', example: 'https://rewards.dev/problems/bad-request' },
    title: { type: 'string' as const, example: 'Bad Request' },
    status: { type: 'integer' as const, example: 400 },
    detail: { type: 'string' as const, example: 'request body is invalid: body.callback.url is required' },
    errors: {
      type: 'array' as const,
      description: 'the members at fault, for a 400',
      items: {
        type: 'object' as const,
        required: ['path', 'message'],
        properties: { path: { type: 'string' as const, example: 'body.callback.url' }, message: { type: 'string' as const, example: 'is required' } },
      },
    },
  },
};

/** A documented problem response; its example is what the error plugin answers for that status. */
const problem = (status: number, description: string) => ({
  description,
  content: { [PROBLEM_CONTENT]: { schema: { $ref: '#/components/schemas/Problem' }, example: new HttpProblem(status, description).toJSON() } },
});

/** The headers of a `secretBearing` route's success answers, as the document describes them. */
const NO_STORE_HEADERS_DOCUMENTED = {
  'Cache-Control': { type: 'string' as const, enum: ['no-store'], description: 'the answer carries a secret: never stored by a cache' },
  Pragma: { type: 'string' as const, enum: ['no-cache'], description: 'the same, for HTTP/1.0 caches' },
};

/** The OAuth2 scopes, for the client-credentials flow of the `oauth2` security scheme. */
export const SCOPE_DESCRIPTIONS = Object.fromEntries(SCOPES.map((scope) => [scope, scope === 'admin' ? 'operator: accounts, clients, experiences, console links, any account (`?account=`)' : scope]));

type Schema = Record<string, unknown> & { response?: Record<string, unknown>; operationId?: string };

function has(schema: Schema, key: string): boolean {
  return schema[key] !== undefined;
}

/** @fastify/swagger's `transform`: the document's view of one route. */
export const documentRoute: SwaggerTransform = ({ schema, url, route }) => {
  const original = (schema ?? {}) as Schema;
  if (original.hide) return { schema: original as FastifySchema, url };
  const out: Schema = { ...original };
  const isV1 = url.startsWith('/v1/');
  if (out.operationId && isV1) out.operationId = `${out.operationId}V1`;
  const scope = route.config?.scope;
  const isToken = url.endsWith('/oauth/token');
  const response: Record<string, unknown> = { ...(original.response ?? {}) };
  const add = (status: number, description: string) => {
    if (response[String(status)] === undefined) response[String(status)] = problem(status, description);
  };
  if (scope !== undefined) {
    out.security = scope === 'authenticated' ? [{ bearerAuth: [] }, { oauth2: [] }] : [{ bearerAuth: [] }, { oauth2: [scope] }];
    add(400, has(out, 'body') || has(out, 'querystring') || has(out, 'params') || has(out, 'headers') ? 'the request is invalid (each member at fault in `errors`), or the Authorization header is malformed' : 'the Authorization header is malformed');
    add(401, 'no access token, or an invalid or expired one (with a `WWW-Authenticate: Bearer` challenge)');
    add(403, scope === 'authenticated' ? 'the token may not be used here' : `the token lacks the scope \`${scope}\``);
    // The bearer check answers 404 for an `accountId` query naming an unknown account (or any other account, for a non-operator).
    add(404, has(out, 'params') ? 'not found (or another account’s), or the `accountId` given is unknown' : 'the `accountId` given is unknown, or not the caller’s (only operators act for other accounts)');
  } else {
    out.security = [];
    if (!isToken) add(400, 'the request is invalid, or its URL is malformed (not UTF-8, a NUL character)');
  }
  if (has(out, 'body') && !isToken) {
    add(413, 'the body is larger than 1 MiB');
    add(415, 'the body is not `application/json`');
  }
  for (const [status, description] of Object.entries(route.config?.problems ?? {})) if (description) add(Number(status), description);
  // An answer that carries a secret says so in its headers (secret-bearing.ts).
  if (route.config?.secretBearing) {
    for (const [status, schema] of Object.entries(response)) if (/^2/.test(status)) response[status] = { ...(schema as object), headers: NO_STORE_HEADERS_DOCUMENTED };
  }
  if (scope !== undefined || url === '/health/ready') add(503, 'the database is unavailable right now; nothing was stored, retry after `Retry-After` seconds');
  out.response = response;
  return { schema: out as FastifySchema, url };
};
