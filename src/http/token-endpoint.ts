import { hash } from 'node:crypto';
import { parse as parseForm } from 'fast-querystring';
import { hasNul, NUL_REFUSED } from './nul-characters.js';
import { isDatabaseUnavailable, type DatabaseReadiness } from '../services/database-readiness.js';
import { DATABASE_RETRY_AFTER_S } from './plugins/errors.js';
import type { Logger } from '../logger.js';
import { grantClientCredentials, type ClientCredentialsContext, type TokenRequest, type TokenResponse } from '../services/client-credentials.js';
import { grantConsoleLink, type ConsoleLinkGrantContext } from '../services/console-links.js';
import { CONSOLE_LINK_GRANT_TYPE } from '../domain/tokens/console-link-code.js';
import { OAuthError } from '../domain/tokens/oauth-errors.js';
import { REALM } from './plugins/auth.js';
import type { KeyStore } from '../services/key-store.js';

/**
 * POST /v1|v2/oauth/token as one function from the request's raw parts to the response's: the
 * content type, parsing, client authentication and every RFC 6749 §5.2 error live here, so the
 * server's fast path (token-fast-path.ts) and the Fastify routes (routes/oauth-token.ts) answer
 * byte for byte alike.
 */

export type TokenEndpointVersion = 1 | 2;

interface TokenHttpRequest {
  version: TokenEndpointVersion;
  contentType: string | undefined;
  authorization: string | undefined;
  /** The body as received (UTF-8); empty when there was none. */
  body: string;
  sourceAddress: string;
}

export interface TokenHttpResponse {
  status: number;
  headers: Readonly<Record<string, string>>;
  body: string;
}

/** Bigger bodies are refused with 413 before they are read in full (a token request is ~200 bytes). */
export const TOKEN_BODY_LIMIT = 64 * 1024;

export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/** RFC 6749 §5.1: every token response, success or error, carries these. Shared: never modified. */
const NO_STORE: Readonly<Record<string, string>> = { 'content-type': JSON_CONTENT_TYPE, 'cache-control': 'no-store', pragma: 'no-cache' } as const;

/** What each version accepts: v2 the form body of RFC 6749, v1 a JSON object. */
const MEDIA_TYPE: Record<TokenEndpointVersion, string> = { 1: 'application/json', 2: 'application/x-www-form-urlencoded' };

export type TokenEndpoint = (request: TokenHttpRequest) => Promise<TokenHttpResponse>;

/** What the endpoint uses: the grants' own needs, the client cache's generation, the signing key in use, and where failures are told. */
interface EndpointDeps extends ClientCredentialsContext, ConsoleLinkGrantContext {
  keys: Pick<KeyStore, 'loadedSignerKid'>;
  log: Logger;
  readiness?: Pick<DatabaseReadiness, 'noteFailure'>;
}

interface RecentResponse {
  response: TokenHttpResponse;
  clientId: string;
  kid: string | undefined;
  clientGeneration: number;
}

/** At most this many distinct requests are remembered within one second. */
const RECENT_RESPONSES_SIZE = 10_000;

/**
 * Successful answers, kept until the clock second ends, by a SHA-256 of everything that decides
 * them (version, Authorization header, content type, body). Within a second the same grant gets
 * the same token anyway (AccessTokens shares it), so the same request gets the same bytes; a
 * client that fetches a token before every call (a common integration) is then answered without
 * parsing, authentication or serialisation. It pays: `npm run bench` row "token before every
 * call" (docs/benchmarks.md). The digest keeps secrets out of the map's keys and out of string
 * comparisons. A remembered answer is not used when, since it was made, the client cache was told
 * of a change (a client or account changed through this process), the signing key rotated, or
 * failed attempts locked the caller's address, or this client at that address, out (the full
 * path then answers 429); changes made by another process apply within the second, as with the
 * client cache.
 */
class RecentResponses {
  #second = -1;
  readonly #entries = new Map<string, RecentResponse>();

  constructor(private readonly deps: EndpointDeps) {}

  static keyOf(request: TokenHttpRequest): string {
    return hash('sha256', `${request.version}\n${request.authorization ?? ''}\n${request.contentType ?? ''}\n${request.body}`, 'base64');
  }

  get(key: string, request: TokenHttpRequest): TokenHttpResponse | undefined {
    if (Math.floor(this.deps.clock() / 1000) !== this.#second) return undefined;
    const recent = this.#entries.get(key);
    if (!recent || recent.clientGeneration !== this.deps.clientCache.generation || recent.kid !== this.deps.keys.loadedSignerKid()) return undefined;
    if (this.deps.failures.retryAfterSeconds({ address: request.sourceAddress, clientId: recent.clientId }) > 0) return undefined;
    return recent.response;
  }

  set(key: string, recent: Omit<RecentResponse, 'kid'>): void {
    const second = Math.floor(this.deps.clock() / 1000);
    if (second !== this.#second) {
      this.#entries.clear();
      this.#second = second;
    }
    if (this.#entries.size < RECENT_RESPONSES_SIZE) this.#entries.set(key, { ...recent, kid: this.deps.keys.loadedSignerKid() });
  }
}

export function createTokenEndpoint(deps: EndpointDeps): TokenEndpoint {
  const recent = new RecentResponses(deps);
  return async (request) => {
    const key = RecentResponses.keyOf(request);
    const remembered = recent.get(key, request);
    if (remembered) return remembered;
    try {
      const clientGeneration = deps.clientCache.generation;
      const body = parseBody(request);
      if (request.version === 2 && single(body, 'grant_type') === CONSOLE_LINK_GRANT_TYPE) {
        // Never remembered: the same request again must find the code used (single use).
        return tokenResponse(request, await grantConsoleLink(deps, consoleLinkRequest(request, body)));
      }
      const grant = tokenRequest(request, body);
      const response = tokenResponse(request, await grantClientCredentials(deps, grant));
      recent.set(key, { response, clientId: grant.clientId, clientGeneration });
      return response;
    } catch (error) {
      if (error instanceof OAuthError) return oauthErrorResponse(error);
      if (isDatabaseUnavailable(error)) {
        deps.log.warn({ err: error }, 'token request: database unavailable');
        deps.readiness?.noteFailure(error);
        const unavailable = new OAuthError('temporarily_unavailable', 'the service cannot reach its database right now; retry later', 503);
        unavailable.retryAfterSeconds = DATABASE_RETRY_AFTER_S;
        return oauthErrorResponse(unavailable);
      }
      deps.log.error({ err: error }, 'token request failed');
      return serverErrorResponse();
    }
  };
}

function tokenResponse(request: TokenHttpRequest, granted: TokenResponse): TokenHttpResponse {
  const body =
    request.version === 2
      ? { access_token: granted.access_token, token_type: granted.token_type, expires_in: granted.expires_in, scope: granted.scope }
      : { access_token: granted.access_token, token_type: granted.token_type, expires_in: granted.expires_in };
  return { status: 200, headers: NO_STORE, body: JSON.stringify(body) };
}

/**
 * `grant_type=urn:rewards:params:oauth:grant-type:console-link&code=…` (docs/console.md): the
 * console is a public client, so the code alone is the grant; client authentication is refused
 * rather than ignored, so a caller mixing up the grants learns it at once.
 */
function consoleLinkRequest(request: TokenHttpRequest, body: Record<string, unknown>): { code: string; scope: string | undefined; sourceAddress: string } {
  if (request.authorization !== undefined || single(body, 'client_secret') !== undefined) {
    throw new OAuthError('invalid_request', 'the console-link grant takes no client authentication: send only grant_type and code');
  }
  const code = single(body, 'code');
  if (!code) throw new OAuthError('invalid_request', 'code is required');
  return { code, scope: single(body, 'scope'), sourceAddress: request.sourceAddress };
}

/** An unexpected failure: a 500 with no details (they go to the log). */
export function serverErrorResponse(): TokenHttpResponse {
  return { status: 500, headers: { ...NO_STORE }, body: JSON.stringify({ error: 'server_error', error_description: 'an unexpected error occurred' }) };
}

export function oauthErrorResponse(error: OAuthError): TokenHttpResponse {
  const headers: Record<string, string> = { ...NO_STORE };
  if (error.status === 401 && error.usedBasicAuth) headers['www-authenticate'] = `Basic realm="${REALM}", charset="UTF-8"`;
  if (error.retryAfterSeconds !== undefined) headers['retry-after'] = String(error.retryAfterSeconds);
  return { status: error.status, headers, body: JSON.stringify({ error: error.code, error_description: error.description }) };
}

/** The media type alone, lower case: `Application/JSON; charset=utf-8` → `application/json`. */
function mediaType(contentType: string | undefined): string | undefined {
  if (contentType === undefined) return undefined;
  const semicolon = contentType.indexOf(';');
  return (semicolon < 0 ? contentType : contentType.slice(0, semicolon)).trim().toLowerCase();
}

function parseBody(request: TokenHttpRequest): Record<string, unknown> {
  if (mediaType(request.contentType) !== MEDIA_TYPE[request.version]) {
    throw new OAuthError('invalid_request', `unsupported Content-Type for this endpoint; send ${MEDIA_TYPE[request.version]}`);
  }
  if (request.version === 2) return parseForm(request.body) as Record<string, unknown>;
  let parsed: unknown;
  try {
    parsed = JSON.parse(request.body);
  } catch {
    throw new OAuthError('invalid_request', 'request body is malformed');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new OAuthError('invalid_request', 'body must be a JSON object');
  return parsed as Record<string, unknown>;
}

function tokenRequest(request: TokenHttpRequest, body: Record<string, unknown>): TokenRequest {
  const auth = extractClientAuth(request.authorization, body);
  if (request.version === 2) {
    const grantType = single(body, 'grant_type');
    if (!grantType) throw new OAuthError('invalid_request', 'grant_type is required');
    if (grantType !== 'client_credentials') throw new OAuthError('unsupported_grant_type', `grant_type "${grantType}" is not supported; use client_credentials or ${CONSOLE_LINK_GRANT_TYPE}`);
  }
  return {
    ...auth,
    sourceAddress: request.sourceAddress,
    scope: request.version === 2 ? single(body, 'scope') : undefined,
    scopeRequired: request.version === 2,
  };
}

/** Reads one parameter; a repeated one is an `invalid_request` (RFC 6749 §3.2). */
function single(body: Record<string, unknown>, name: string): string | undefined {
  const value = Object.hasOwn(body, name) ? body[name] : undefined;
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw new OAuthError('invalid_request', `parameter "${name}" must appear once, as a string`);
  if (hasNul(value)) throw new OAuthError('invalid_request', `parameter "${name}" ${NUL_REFUSED}`);
  return value;
}

function extractClientAuth(header: string | undefined, body: Record<string, unknown>): Pick<TokenRequest, 'clientId' | 'clientSecret' | 'usedBasicAuth'> {
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

/** RFC 6749 §2.3.1: the Basic credentials are form-urlencoded before base64. */
function parseBasic(header: string): { id: string; secret: string } {
  const encoded = /^Basic +([A-Za-z0-9+/]+=*) *$/i.exec(header)?.[1];
  const decoded = encoded ? Buffer.from(encoded, 'base64').toString('utf8') : '';
  const colon = decoded.indexOf(':');
  if (colon < 0) throw basicFailure('the Basic credentials are not base64 of the client id and secret joined by a colon');
  const formDecode = (text: string) => decodeURIComponent(text.replaceAll('+', ' '));
  try {
    const credentials = { id: formDecode(decoded.slice(0, colon)), secret: formDecode(decoded.slice(colon + 1)) };
    if (hasNul(credentials.id) || hasNul(credentials.secret)) throw basicFailure(`Basic credentials ${NUL_REFUSED}`);
    return credentials;
  } catch (error) {
    if (error instanceof OAuthError) throw error;
    throw basicFailure('the Basic credentials are not form-urlencoded: encode the client id and secret before joining them (RFC 6749 §2.3.1)');
  }
}

function basicFailure(description: string): OAuthError {
  const error = new OAuthError('invalid_client', description);
  error.usedBasicAuth = true;
  return error;
}
