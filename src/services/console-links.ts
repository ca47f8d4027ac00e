import type { Config } from '../config.js';
import { parseDuration } from '../config.js';
import type { Executor } from '../storage/database.js';
import { findAccountById } from '../storage/repositories/accounts.js';
import type { Page } from '../storage/repositories/page.js';
import {
  consoleLinkExists,
  deleteExpiredConsoleLinks,
  findConsoleLink,
  insertConsoleLink,
  listConsoleLinks as listConsoleLinkRows,
  markConsoleLinkRevoked,
  useConsoleLink,
} from '../storage/repositories/console-links.js';
import type { AccessChangeContext } from './accounts.js';
import type { AccessTokens } from './access-tokens.js';
import type { TokenResponse } from './client-credentials.js';
import { conflict, invalid, notFound } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import { iso } from '../domain/time.js';
import { CONSOLE_LINK_CLIENT_PREFIX, CONSOLE_LINK_GRANT_TYPE, generateConsoleLinkCode, hashConsoleLinkCode } from '../domain/tokens/console-link-code.js';
import type { FailureLimiter } from '../domain/tokens/failure-limiter.js';
import { OAuthError } from '../domain/tokens/oauth-errors.js';
import { DEFAULT_CLIENT_SCOPES, parseScopeList } from '../domain/tokens/scopes.js';
import type { ConsoleLink } from '../domain/tokens/console-link.js';

/** A code can be exchanged this long after the link was made. */
const CONSOLE_LINK_CODE_TTL_MS = 10 * 60_000;
/** The lifetime of the token a link grants, unless `--ttl` / `{"ttl"}` says otherwise. */
const CONSOLE_TOKEN_DEFAULT_TTL_MS = 3_600_000;
/** At most a day; the session ends sooner when the link is revoked or its account deactivated (docs/console.md). */
export const CONSOLE_TOKEN_MAX_TTL_MS = 24 * 3_600_000;
const CONSOLE_TOKEN_MIN_TTL_MS = 60_000;
/** Used or expired links are kept this long (who was let in, and when), then deleted when a new link is made. */
const KEEP_EXPIRED_LINKS_MS = 30 * 86_400_000;

export interface IssuedConsoleLink {
  /** `cln_…`: what revoking the link's session names. */
  id: string;
  url: string;
  expiresAt: string;
  tokenTtlSeconds: number;
}

/** `ttl` in the configuration's duration syntax (`30m`, `1h`, `1d`); `field` names it for the caller (`body.ttl`, `--ttl`). */
export function parseConsoleTokenTtl(ttl: string | undefined, field: string): number {
  if (ttl === undefined) return CONSOLE_TOKEN_DEFAULT_TTL_MS;
  let ms: number;
  try {
    ms = parseDuration(ttl);
  } catch (error) {
    throw invalid('ttl', [{ path: field, message: (error as Error).message }]);
  }
  if (ms < CONSOLE_TOKEN_MIN_TTL_MS || ms > CONSOLE_TOKEN_MAX_TTL_MS) throw invalid('ttl', [{ path: field, message: `must be between 1m and 24h, got "${ttl}"` }]);
  return ms;
}

/**
 * Makes a console link for the account: a one-time code (256 bits) in the fragment of a URL under
 * `/console/`, so it never reaches a server or its logs when the page is opened. Only the code's
 * SHA-256 is stored. An unknown account is not found; an inactive one is a conflict.
 */
export async function createConsoleLink(deps: { db: Executor; config: Pick<Config, 'publicUrl'>; clock: () => number }, accountId: string, tokenTtlMs: number): Promise<IssuedConsoleLink> {
  const account = await findAccountById(deps.db, accountId);
  if (!account) throw notFound('account');
  if (!account.active) throw conflict(`account ${account.id} is inactive: activate it before making a console link`);
  const now = deps.clock();
  const code = generateConsoleLinkCode();
  const link = await insertConsoleLink(deps.db, {
    id: newId('cln', now),
    account_id: account.id,
    code_hash: hashConsoleLinkCode(code),
    created_at: now,
    expires_at: now + CONSOLE_LINK_CODE_TTL_MS,
    token_ttl_ms: tokenTtlMs,
    used_at: null,
    revoked_at: null,
  });
  await deleteExpiredConsoleLinks(deps.db, now - KEEP_EXPIRED_LINKS_MS);
  return { id: link.id, url: `${deps.config.publicUrl}/console/#link=${code}`, expiresAt: iso(link.expiresAt), tokenTtlSeconds: Math.floor(tokenTtlMs / 1000) };
}

/** The account's console links, or one page of them, in creation order (never a code: only its hash is stored). */
export function listConsoleLinks(db: Executor, accountId: string, page: Page = {}): Promise<ConsoleLink[]> {
  return listConsoleLinkRows(db, accountId, page);
}

/**
 * Revokes a console link of the account: its code can no longer be exchanged, and the token its
 * session holds is refused by every process within AUTH_REFRESH_INTERVAL (this one at once).
 * Another account's link is not found; revoking a revoked link changes nothing.
 */
export async function revokeConsoleLink(ctx: AccessChangeContext, accountId: string, linkId: string): Promise<ConsoleLink> {
  const { link, revocation } = await ctx.db.transaction().execute(async (tx) => {
    const link = await findConsoleLink(tx, linkId);
    if (!link || link.accountId !== accountId) throw notFound('console link');
    if (!(await markConsoleLinkRevoked(tx, linkId, ctx.clock()))) return { link, revocation: undefined };
    return { link: (await findConsoleLink(tx, linkId))!, revocation: await ctx.revocations.record(tx, 'console-link', linkId, 'revoked') };
  });
  if (revocation) ctx.revocations.apply([revocation]);
  return link;
}

/** What the console-link grant needs: the links, the token issuer, the failure limits, the clock. */
export interface ConsoleLinkGrantContext {
  db: Executor;
  tokens: AccessTokens;
  failures: FailureLimiter;
  clock: () => number;
}

/**
 * The console-link grant of the token endpoint: exchanges a code once for an access token of the
 * link's account with the client-business scopes (never `admin`), living the link's ttl. Unknown
 * codes count like failed client authentications, with the grant in place of a client id: 10 a
 * minute from one address lock that address out of code exchanges, and count towards its limit
 * for every client (docs/tokens.md).
 */
export async function grantConsoleLink(deps: ConsoleLinkGrantContext, request: { code: string; scope: string | undefined; sourceAddress: string }): Promise<TokenResponse> {
  const source = { address: request.sourceAddress, clientId: CONSOLE_LINK_GRANT_TYPE };
  const wait = deps.failures.retryAfterSeconds(source);
  if (wait > 0) {
    const error = new OAuthError('temporarily_unavailable', 'too many failed attempts; retry later');
    error.retryAfterSeconds = wait;
    throw error;
  }
  let scopes: string[] = [...DEFAULT_CLIENT_SCOPES];
  if (request.scope !== undefined) {
    const requested = parseScopeList(request.scope);
    const notAllowed = requested.filter((s) => !scopes.includes(s));
    if (requested.length === 0) throw new OAuthError('invalid_scope', 'scope is empty; omit it for every scope a console link grants');
    if (notAllowed.length > 0) throw new OAuthError('invalid_scope', `scope not granted by a console link: ${notAllowed.join(' ')}`);
    scopes = requested;
  }
  const codeHash = hashConsoleLinkCode(request.code);
  const link = await useConsoleLink(deps.db, codeHash, deps.clock());
  if (!link) {
    // Only a code that never existed is a guess; a spent or expired one (a page reloaded, two
    // tabs racing) is not, and must not lock the address out of the token endpoint.
    if (!(await consoleLinkExists(deps.db, codeHash))) deps.failures.recordFailure(source);
    throw new OAuthError('invalid_grant', 'the console link code is unknown, expired or already used');
  }
  const ttlSeconds = Math.floor(link.tokenTtlMs / 1000);
  const accessToken = await deps.tokens.issue({ clientId: `${CONSOLE_LINK_CLIENT_PREFIX}${link.id}`, accountId: link.accountId, scopes, ttlSeconds });
  return { access_token: accessToken, token_type: 'Bearer', expires_in: ttlSeconds, scope: scopes.join(' ') };
}
