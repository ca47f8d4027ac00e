import type { Executor } from '../storage/database.js';
import { findAccountById, findAccountByIdOrName, insertAccount, updateAccount, type Account } from '../storage/repositories/accounts.js';
import { insertOAuthClient, rotateOAuthClientSecret, type OAuthClient } from '../storage/repositories/oauth-clients.js';
import { generateClientSecret } from '../domain/tokens/client-secret.js';
import { DEFAULT_CLIENT_SCOPES, isScope, parseScopeList } from '../domain/tokens/scopes.js';
import { conflict, invalid, notFound } from '../domain/errors.js';
import { isUniqueViolation } from '../storage/database-errors.js';

/** A rotated-out client secret keeps working this long, so deployments can roll over. */
export const PREVIOUS_SECRET_GRACE_MS = 24 * 3_600_000;

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

/**
 * Renames and/or (de)activates an account. A deactivated account's clients get `invalid_client`
 * at the token endpoint. The operator account cannot be deactivated: that would lock the operator
 * out of the admin API.
 */
export async function changeAccount(db: Executor, id: string, patch: { name?: string; active?: boolean }, field = 'name'): Promise<Account> {
  const account = await findAccountById(db, id);
  if (!account) throw notFound(`account ${id}`);
  if (patch.active === false && account.isOperator) throw conflict('the operator account cannot be deactivated');
  let name: string | undefined;
  if (patch.name !== undefined) {
    name = patch.name.trim();
    if (name.length === 0 || name.length > 200) throw invalid('account name', [{ path: field, message: 'must be 1..200 characters' }]);
    const holder = await findAccountByIdOrName(db, name);
    if (holder && holder.id !== id) throw conflict(`an account named "${name}" already exists`);
  }
  try {
    return (await updateAccount(db, id, { name, active: patch.active }))!;
  } catch (error) {
    if (isUniqueViolation(error)) throw conflict(`an account named "${name}" already exists`);
    throw error;
  }
}

/**
 * `admin` makes a token an operator token (it may act for any account), so only clients of the
 * operator account may hold it. A client needs at least one scope to obtain tokens.
 */
export function checkClientScopes(account: Account, scopes: string[], field: string): void {
  if (scopes.length === 0) throw invalid('scopes', [{ path: field, message: 'a client needs at least one scope' }]);
  if (scopes.includes('admin') && !account.isOperator) throw invalid('scopes', [{ path: field, message: 'only clients of the operator account may hold the admin scope' }]);
}

/** Validates a space-separated scope list (`field` names it for the caller); undefined means the default client scopes. */
export function resolveScopes(text: string | undefined, field: string): string[] {
  if (text === undefined) return [...DEFAULT_CLIENT_SCOPES];
  const scopes = parseScopeList(text);
  const unknown = scopes.filter((s) => !isScope(s));
  if (unknown.length > 0) throw invalid('scopes', [{ path: field, message: `unknown scope: ${unknown.join(' ')}` }]);
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
