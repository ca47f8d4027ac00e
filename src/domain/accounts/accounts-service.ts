import type { Executor } from '../../storage/database.js';
import { findAccountById, findAccountByIdOrName, insertAccount, updateAccount, type Account } from '../../storage/repositories/accounts.js';
import { insertOAuthClient, rotateOAuthClientSecret, type OAuthClient } from '../../storage/repositories/oauth-clients.js';
import { generateClientSecret } from '../tokens/client-secret.js';
import { DEFAULT_CLIENT_SCOPES, isScope, parseScopeList } from '../tokens/scopes.js';

/** A rotated-out client secret keeps working this long, so deployments can roll over. */
export const PREVIOUS_SECRET_GRACE_MS = 24 * 3_600_000;

export class AccountsError extends Error {
  constructor(
    readonly kind: 'not_found' | 'conflict' | 'invalid',
    message: string,
  ) {
    super(message);
    this.name = 'AccountsError';
  }
}

export async function createAccount(db: Executor, name: string, now?: number): Promise<Account> {
  const trimmed = name.trim();
  if (trimmed.length === 0 || trimmed.length > 200) throw new AccountsError('invalid', 'account name must be 1..200 characters');
  if (await findAccountByIdOrName(db, trimmed)) throw new AccountsError('conflict', `an account named "${trimmed}" already exists`);
  return insertAccount(db, { name: trimmed }, now);
}

/**
 * Renames and/or (de)activates an account. A deactivated account's clients get `invalid_client`
 * at the token endpoint. The operator account cannot be deactivated: that would lock the operator
 * out of the admin API.
 */
export async function changeAccount(db: Executor, id: string, patch: { name?: string; active?: boolean }): Promise<Account> {
  const account = await findAccountById(db, id);
  if (!account) throw new AccountsError('not_found', `account ${id} not found`);
  if (patch.active === false && account.isOperator) throw new AccountsError('conflict', 'the operator account cannot be deactivated');
  let name: string | undefined;
  if (patch.name !== undefined) {
    name = patch.name.trim();
    if (name.length === 0 || name.length > 200) throw new AccountsError('invalid', 'account name must be 1..200 characters');
    const holder = await findAccountByIdOrName(db, name);
    if (holder && holder.id !== id) throw new AccountsError('conflict', `an account named "${name}" already exists`);
  }
  return (await updateAccount(db, id, { name, active: patch.active }))!;
}

/**
 * `admin` makes a token an operator token (it may act for any account), so only clients of the
 * operator account may hold it. A client needs at least one scope to obtain tokens.
 */
export function checkClientScopes(account: Account, scopes: string[]): void {
  if (scopes.length === 0) throw new AccountsError('invalid', 'a client needs at least one scope');
  if (scopes.includes('admin') && !account.isOperator) throw new AccountsError('invalid', 'only clients of the operator account may hold the admin scope');
}

/** Validates a space-separated scope list; undefined means the default client scopes. */
export function resolveScopes(text: string | undefined): string[] {
  if (text === undefined) return [...DEFAULT_CLIENT_SCOPES];
  const scopes = parseScopeList(text);
  const unknown = scopes.filter((s) => !isScope(s));
  if (unknown.length > 0) throw new AccountsError('invalid', `unknown scope: ${unknown.join(' ')}`);
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
  if (!client) throw new AccountsError('not_found', `client ${clientId} not found`);
  return { client, clientSecret };
}
