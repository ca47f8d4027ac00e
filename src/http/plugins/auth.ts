import type { FastifyReply, FastifyRequest } from 'fastify';
import type { TypedApp } from '../typed-app.js';
import { InvalidTokenError, type AccessTokens } from '../../services/access-tokens.js';
import { hasScope, type Scope } from '../../domain/tokens/scopes.js';
import { getAccount, type AccessChangeContext } from '../../services/accounts.js';
import { DomainError, notFound } from '../../domain/errors.js';
import { addQueryParameter } from '../query-parameters.js';
import { Type } from 'typebox';

/** Who is calling: set on every protected request before its handler runs. */
interface AuthContext {
  clientId: string;
  /** The account the token belongs to. */
  tokenAccountId: string;
  /** The account the request acts for: the token's, or `?accountId=` for an operator. */
  accountId: string;
  scopes: string[];
  isOperator: boolean;
}

/** `scope` a route requires, or `authenticated` for any valid token. */
type RouteScope = Scope | 'authenticated';

declare module 'fastify' {
  interface FastifyContextConfig {
    scope?: RouteScope;
  }
  interface FastifyRequest {
    auth: AuthContext;
  }
}

export const REALM = 'rewards';

/** `?accountId=`, which every protected route takes: the account an operator acts for. */
const ACCOUNT_ID_PARAMETER = Type.Optional(Type.String({ description: "operators (scope `admin`): act for this account; for anyone else another account's id is a 404, as is an unknown one" }));

function challenge(error?: string, description?: string, scope?: string): string {
  let value = `Bearer realm="${REALM}"`;
  if (error) value += `, error="${error}"`;
  if (description) value += `, error_description="${description.replaceAll('"', "'")}"`;
  if (scope) value += `, scope="${scope}"`;
  return value;
}

/**
 * RFC 6750 bearer authentication for every route registered inside `app`. Each route must
 * declare `config.scope`; a route without one fails at start-up rather than being left open. A
 * token that verifies but whose account, client or console-link session was cut since is
 * `invalid_token` too.
 */
export function protectRoutes(app: TypedApp, deps: Pick<AccessChangeContext, 'db' | 'revocations'> & { tokens: Pick<AccessTokens, 'verify'> }): void {
  app.decorateRequest('auth', null as unknown as AuthContext);
  app.addHook('onRoute', (route) => {
    if (!route.config?.scope) throw new Error(`route ${String(route.method)} ${route.url} declares no scope`);
    // Read below on every protected route, so every one of them takes it (and documents it); any other parameter it does not declare is a 400.
    addQueryParameter(route, 'accountId', ACCOUNT_ID_PARAMETER);
  });
  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    const needed = request.routeOptions.config.scope!;
    const header = request.headers.authorization;
    const match = header ? /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(header) : null;
    if (!header || !/^Bearer(\s|$)/i.test(header)) {
      // RFC 6750 §3.1: a request without credentials gets a bare challenge, no error code.
      throw new DomainError('unauthenticated', 'an access token is required (Authorization: Bearer …)', undefined, { challenge: challenge() });
    }
    if (!match) {
      throw new DomainError('invalid', 'malformed Authorization header', undefined, { challenge: challenge('invalid_request', 'malformed Authorization header') });
    }
    let claims;
    try {
      claims = await deps.tokens.verify(match[1]!);
    } catch (error) {
      if (!(error instanceof InvalidTokenError)) throw error;
      throw new DomainError('unauthenticated', `the access token is invalid: ${error.message}`, undefined, { challenge: challenge('invalid_token', error.message) });
    }
    // A token that verifies is refused once its account, client or console link was cut (in memory; docs/tokens.md).
    if (!deps.revocations.ready) await deps.revocations.load();
    const revoked = deps.revocations.refusal(claims);
    if (revoked !== undefined) {
      throw new DomainError('unauthenticated', `the access token is invalid: ${revoked}`, undefined, { challenge: challenge('invalid_token', revoked) });
    }
    if (needed !== 'authenticated' && !hasScope(claims.scopes, needed)) {
      throw new DomainError('forbidden', `the access token lacks the scope "${needed}"`, undefined, { challenge: challenge('insufficient_scope', `requires ${needed}`, needed) });
    }
    const isOperator = claims.scopes.includes('admin');
    let accountId = claims.accountId;
    const requested = (request.query as Record<string, unknown> | undefined)?.accountId;
    if (typeof requested === 'string' && requested !== '' && requested !== accountId) {
      // Acting for another account is an operator's power; for anyone else that account does not exist.
      if (!isOperator) throw notFound('account');
      await getAccount(deps.db, requested);
      accountId = requested;
    }
    request.auth = { clientId: claims.clientId, tokenAccountId: claims.accountId, accountId, scopes: claims.scopes, isOperator };
    void reply;
  });
}
