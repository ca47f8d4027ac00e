import type { Db, Executor } from '../storage/database.js';
import { findAccountById, findAccountByIdOrName, insertAccount, listAccounts as listAccountRows, updateAccount } from '../storage/repositories/accounts.js';
import { deleteOAuthClient, findOAuthClient, insertOAuthClient, listOAuthClients, rotateOAuthClientSecret, updateOAuthClient } from '../storage/repositories/oauth-clients.js';
import type { Page } from '../storage/repositories/page.js';
import type { TokenRevocations } from './token-revocations.js';
import { generateClientSecret } from '../domain/tokens/client-secret.js';
import { DEFAULT_CLIENT_SCOPES, isScope, parseScopeList, SCOPES, unknownScopesMessage } from '../domain/tokens/scopes.js';
import { conflict, invalid, notFound } from '../domain/errors.js';
import { isUniqueViolation } from '../storage/database-errors.js';
import type { Account } from '../domain/accounts/account.js';
import type { OAuthClient } from '../domain/accounts/oauth-client.js';

/** A rotated-out client secret keeps working this long, so deployments can roll over. */
const PREVIOUS_SECRET_GRACE_MS = 24 * 3_600_000;

/** The account; an unknown one is not found. */
export async function getAccount(db: Executor, id: string): Promise<Account> {
  const account = await findAccountById(db, id);
  if (!account) throw notFound('account');
  return account;
}

/** Every account, or one page of them, in creation order. */
export function listAccounts(db: Executor, page: Page = {}): Promise<Account[]> {
  return listAccountRows(db, page);
}

/** `field` names the name for the caller (`body.name`, `--name`). */
export async function createAccount(db: Executor, name: string, options: { now?: number; field?: string } = {}): Promise<Account> {
  const { now, field = 'name' } = options;
  const trimmed = name.trim();
  if (trimmed.length === 0 || trimmed.length > 200) throw invalid('account name', [{ path: field, message: 'must be 1..200 characters' }]);
  if (await findAccountByIdOrName(db, trimmed)) throw conflict(`an account named "${trimmed}" already exists`);
  try {
    return await insertAccount(db, { name: trimmed }, now);
  } catch (error) {
    // Two creates with the same name at once: the second finds the name taken by the first.
    if (isUniqueViolation(error)) throw conflict(`an account named "${trimmed}" already exists`);
    throw error;
  }
}

/** What changing an account or a client needs: the revocations record a deactivation in its transaction and apply it here at once. */
export interface AccessChangeContext {
  db: Db;
  revocations: TokenRevocations;
  clock: () => number;
}

/**
 * Renames and/or (de)activates an account. A deactivated account's clients get `invalid_client`
 * at the token endpoint and every token of the account (its clients', its console links') is
 * refused by every process within AUTH_REFRESH_INTERVAL, by this one at once; reactivated, it
 * gets new tokens, never its old ones back. The operator account cannot be deactivated: that
 * would lock the operator out of the admin API.
 */
export async function changeAccount(ctx: AccessChangeContext, id: string, patch: { name?: string; active?: boolean }, field = 'name'): Promise<Account> {
  const account = await findAccountById(ctx.db, id);
  if (!account) throw notFound(`account ${id}`);
  if (patch.active === false && account.isOperator) throw conflict('the operator account cannot be deactivated');
  let name: string | undefined;
  if (patch.name !== undefined) {
    name = patch.name.trim();
    if (name.length === 0 || name.length > 200) throw invalid('account name', [{ path: field, message: 'must be 1..200 characters' }]);
    const holder = await findAccountByIdOrName(ctx.db, name);
    if (holder && holder.id !== id) throw conflict(`an account named "${name}" already exists`);
  }
  try {
    const { changed, revocation } = await ctx.db.transaction().execute(async (tx) => {
      const before = await findAccountById(tx, id);
      const changed = (await updateAccount(tx, id, { name, active: patch.active }))!;
      const change = activeChange(before?.active, changed.active);
      return { changed, revocation: change && (await ctx.revocations.record(tx, 'account', id, change)) };
    });
    if (revocation) ctx.revocations.apply([revocation]);
    return changed;
  } catch (error) {
    if (isUniqueViolation(error)) throw conflict(`an account named "${name}" already exists`);
    throw error;
  }
}

/** The revocation change of `active` going from `before` to `after`, if it moved (setting it to what it was cuts nothing). */
function activeChange(before: boolean | undefined, after: boolean): 'deactivated' | 'reactivated' | undefined {
  if (before === after || before === undefined) return undefined;
  return after ? 'reactivated' : 'deactivated';
}

/** (De)activates a client and/or replaces its scopes; a deactivation cuts its tokens like an account's (`changeAccount`). */
export async function changeClient(ctx: AccessChangeContext, clientId: string, patch: { active?: boolean; scopes?: string[] }): Promise<OAuthClient> {
  const { changed, revocation } = await ctx.db.transaction().execute(async (tx) => {
    const before = await findOAuthClient(tx, clientId);
    if (!before) throw notFound(`client ${clientId}`);
    const changed = (await updateOAuthClient(tx, clientId, patch, ctx.clock()))!;
    const change = activeChange(before.active, changed.active);
    return { changed, revocation: change && (await ctx.revocations.record(tx, 'client', clientId, change)) };
  });
  if (revocation) ctx.revocations.apply([revocation]);
  return changed;
}

/** Deletes a client: its credentials stop at once, and its tokens are refused like a deactivated client's. */
export async function deleteClient(ctx: AccessChangeContext, clientId: string): Promise<void> {
  const revocation = await ctx.db.transaction().execute(async (tx) => {
    if (!(await deleteOAuthClient(tx, clientId))) throw notFound(`client ${clientId}`);
    return ctx.revocations.record(tx, 'client', clientId, 'deleted');
  });
  ctx.revocations.apply([revocation]);
}

/**
 * `admin` makes a token an operator token (it may act for any account), so only clients of the
 * operator account may hold it. A client needs at least one scope to obtain tokens.
 */
export function checkClientScopes(account: Account, scopes: string[], field: string): void {
  if (scopes.length === 0) throw invalid('scopes', [{ path: field, message: 'a client needs at least one scope' }]);
  if (scopes.includes('admin') && !account.isOperator) throw invalid('scopes', [{ path: field, message: 'only clients of the operator account may hold the admin scope' }]);
}

/** The account's client; another account's (or an unknown one) is not found. */
export async function getAccountClient(db: Executor, accountId: string, clientId: string): Promise<OAuthClient> {
  const client = await findOAuthClient(db, clientId);
  if (!client || client.accountId !== accountId) throw notFound('client');
  return client;
}

/** The account's clients, or one page of them, in creation order (never their secrets: only hashes are stored). */
export async function listAccountClients(db: Executor, accountId: string, page: Page = {}): Promise<OAuthClient[]> {
  return listOAuthClients(db, accountId, page);
}

/** The scopes a client of the account may be given: `["a","b"]` or `"a b"`, each known and allowed for the account (`checkClientScopes`). */
export function clientScopes(account: Account, input: string[] | string | undefined, field: string): string[] {
  const scopes = resolveScopes(Array.isArray(input) ? input.join(' ') : input, field);
  checkClientScopes(account, scopes, field);
  return scopes;
}

/** Validates a space-separated scope list (`field` names it for the caller); undefined means the default client scopes. */
export function resolveScopes(text: string | undefined, field: string): string[] {
  if (text === undefined) return [...DEFAULT_CLIENT_SCOPES];
  const scopes = parseScopeList(text);
  const unknown = scopes.filter((s) => !isScope(s));
  if (unknown.length > 0) throw invalid('scopes', [{ path: field, message: `${unknownScopesMessage(scopes)}; the scopes are ${SCOPES.join(' ')}` }]);
  return scopes;
}

export interface IssuedClient {
  client: OAuthClient;
  /** The only moment the plain secret exists outside the caller's hands. */
  clientSecret: string;
}

export async function createClient(db: Executor, accountId: string, scopes: string[], now?: number): Promise<IssuedClient> {
  const clientSecret = generateClientSecret();
  const client = await insertOAuthClient(db, { accountId, scopes, secret: clientSecret }, now);
  return { client, clientSecret };
}

export async function rotateClientSecret(db: Executor, clientId: string, now = Date.now()): Promise<IssuedClient> {
  const clientSecret = generateClientSecret();
  const client = await rotateOAuthClientSecret(db, clientId, clientSecret, now + PREVIOUS_SECRET_GRACE_MS, now);
  if (!client) throw notFound(`client ${clientId}`);
  return { client, clientSecret };
}
