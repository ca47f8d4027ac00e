import type { ClientCache } from '../storage/client-cache.js';
import type { ClientForAuthentication } from '../storage/repositories/oauth-clients.js';
import type { AccessTokens } from './access-tokens.js';
import { secretMatches } from '../domain/tokens/client-secret.js';
import type { FailureLimiter } from '../domain/tokens/failure-limiter.js';
import { OAuthError } from '../domain/tokens/oauth-errors.js';
import { isScope, parseScopeList, unknownScopesMessage } from '../domain/tokens/scopes.js';

export interface TokenRequest {
  clientId: string;
  clientSecret: string;
  usedBasicAuth: boolean;
  sourceAddress: string;
  /** v2: the requested scope (required); v1: undefined, every allowed scope is granted. */
  scope: string | undefined;
  scopeRequired: boolean;
}

export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  scope: string;
}

/** The `error_description`s of `invalid_client` (the `error` code stays RFC 6749's): what is wrong and what to do. */
const INVALID_CLIENT = {
  wrongCredentials: 'the client id or secret is wrong; check both, or ask the operator for a new secret',
  clientDeactivated: 'this client is deactivated; ask the operator to reactivate it',
  accountDeactivated: "this client's account is deactivated; ask the operator to reactivate it",
} as const;

function failure(request: TokenRequest, error: OAuthError): never {
  error.usedBasicAuth = request.usedBasicAuth;
  throw error;
}

function presentsSecretOf(client: ClientForAuthentication, secret: string, now: number): boolean {
  return secretMatches(secret, client.secretHash) || (client.previousSecretExpiresAt !== null && client.previousSecretExpiresAt > now && secretMatches(secret, client.previousSecretHash));
}

/** What the client credentials grant needs: the client rows (cached), the token issuer, the failure limits, the clock. */
export interface ClientCredentialsContext {
  clientCache: ClientCache;
  tokens: AccessTokens;
  failures: FailureLimiter;
  clock: () => number;
}

/** RFC 6749 §4.4 client credentials grant, after the endpoint has parsed its parameters. */
export async function grantClientCredentials(deps: ClientCredentialsContext, request: TokenRequest): Promise<TokenResponse> {
  // Throttled by address and by (client, address), never by client id alone: docs/tokens.md.
  const source = { address: request.sourceAddress, clientId: request.clientId };
  const wait = deps.failures.retryAfterSeconds(source);
  if (wait > 0) {
    const error = new OAuthError('temporarily_unavailable', 'too many failed authentication attempts; retry later');
    error.retryAfterSeconds = wait;
    failure(request, error);
  }

  const now = deps.clock();
  let client = await deps.clientCache.get(request.clientId, now);
  let authenticated = client !== undefined && presentsSecretOf(client, request.clientSecret, now);
  if (client && !authenticated) {
    // The cached row may predate a rotation made by another process: ask the database before refusing.
    client = await deps.clientCache.get(request.clientId, now, true);
    authenticated = client !== undefined && presentsSecretOf(client, request.clientSecret, now);
  }
  if (!client || !authenticated) {
    deps.failures.recordFailure(source);
    return failure(request, new OAuthError('invalid_client', INVALID_CLIENT.wrongCredentials));
  }
  // Said only to whoever proved the secret: why a right secret gets no token, and who can fix it.
  if (!client.active) return failure(request, new OAuthError('invalid_client', INVALID_CLIENT.clientDeactivated));
  if (!client.accountActive) return failure(request, new OAuthError('invalid_client', INVALID_CLIENT.accountDeactivated));
  if (client.scopes.length === 0) {
    return failure(request, new OAuthError('unauthorized_client', 'client is not allowed to obtain tokens: it holds no scope'));
  }

  let granted = client.scopes;
  if (request.scopeRequired) {
    // Said only to whoever proved the secret: what this client may ask for, and the scope it most likely meant.
    const mayAskFor = `this client may ask for: ${client.scopes.join(' ')} (space-separated)`;
    const requested = parseScopeList(request.scope ?? '');
    if (requested.length === 0) return failure(request, new OAuthError('invalid_scope', `scope is required; ${mayAskFor}`));
    const unknown = requested.filter((s) => !isScope(s));
    if (unknown.length > 0) return failure(request, new OAuthError('invalid_scope', `${unknownScopesMessage(requested)}; ${mayAskFor}`));
    const allowed = client.scopes;
    const notAllowed = requested.filter((s) => !allowed.includes(s));
    if (notAllowed.length > 0) return failure(request, new OAuthError('invalid_scope', `scope not allowed for this client: ${notAllowed.join(' ')}; ${mayAskFor}`));
    granted = requested;
  }

  const accessToken = await deps.tokens.issue({ clientId: client.clientId, accountId: client.accountId, scopes: granted });
  return { access_token: accessToken, token_type: 'Bearer', expires_in: deps.tokens.ttlSeconds, scope: granted.join(' ') };
}
