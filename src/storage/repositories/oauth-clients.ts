import type { Page } from './page.js';
import type { Executor } from '../database.js';
import type { OAuthClientsTable } from '../tables/index.js';
import { precompiled } from '../precompiled.js';
import { newId } from '../../domain/ids.js';
import { hashClientSecret } from '../../domain/tokens/client-secret.js';
import type { OAuthClient } from '../../domain/accounts/oauth-client.js';

function toOAuthClient(row: OAuthClientsTable): OAuthClient {
  return {
    clientId: row.client_id,
    accountId: row.account_id,
    scopes: row.scopes.split(' ').filter(Boolean),
    secretHash: row.secret_hash,
    previousSecretHash: row.previous_secret_hash,
    previousSecretExpiresAt: row.previous_secret_expires_at,
    active: Boolean(row.active),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export async function insertOAuthClient(db: Executor, input: { accountId: string; scopes: string[]; secret: string }, now = Date.now()): Promise<OAuthClient> {
  const row: OAuthClientsTable = {
    client_id: newId('cli', now),
    account_id: input.accountId,
    scopes: input.scopes.join(' '),
    secret_hash: hashClientSecret(input.secret),
    previous_secret_hash: null,
    previous_secret_expires_at: null,
    active: 1,
    created_at: now,
    updated_at: now,
  };
  await db.insertInto('oauth_clients').values(row).execute();
  return toOAuthClient(row);
}

const clientForAuthentication = precompiled((db, clientId: string) =>
  db
    .selectFrom('oauth_clients')
    .innerJoin('accounts', 'accounts.id', 'oauth_clients.account_id')
    .selectAll('oauth_clients')
    .select('accounts.active as account_active')
    .where('oauth_clients.client_id', '=', clientId),
);

export type ClientForAuthentication = OAuthClient & { accountActive: boolean };

/** Looks up the client together with its account's state, in one query (token endpoint hot path). */
export async function findClientForAuthentication(db: Executor, clientId: string): Promise<ClientForAuthentication | undefined> {
  const [row] = await clientForAuthentication(db, clientId);
  if (!row) return undefined;
  return { ...toOAuthClient(row), accountActive: Boolean(row.account_active) };
}

export async function findOAuthClient(db: Executor, clientId: string): Promise<OAuthClient | undefined> {
  const row = await db.selectFrom('oauth_clients').selectAll().where('client_id', '=', clientId).executeTakeFirst();
  return row && toOAuthClient(row);
}

export async function listOAuthClients(db: Executor, accountId: string, page: Page = {}): Promise<OAuthClient[]> {
  let query = db.selectFrom('oauth_clients').selectAll().where('account_id', '=', accountId).orderBy('client_id');
  if (page.after !== undefined) query = query.where('client_id', '>', page.after);
  if (page.limit !== undefined) query = query.limit(page.limit);
  return (await query.execute()).map(toOAuthClient);
}

/** New secret becomes current; the old one stays valid until `previousValidUntil`. */
export async function rotateOAuthClientSecret(db: Executor, clientId: string, newSecret: string, previousValidUntil: number, now = Date.now()): Promise<OAuthClient | undefined> {
  const current = await findOAuthClient(db, clientId);
  if (!current) return undefined;
  await db
    .updateTable('oauth_clients')
    .set({
      secret_hash: hashClientSecret(newSecret),
      previous_secret_hash: current.secretHash,
      previous_secret_expires_at: previousValidUntil,
      updated_at: now,
    })
    .where('client_id', '=', clientId)
    .execute();
  return findOAuthClient(db, clientId);
}

export async function updateOAuthClient(db: Executor, clientId: string, patch: { active?: boolean; scopes?: string[] }, now = Date.now()): Promise<OAuthClient | undefined> {
  const values: Partial<OAuthClientsTable> = { updated_at: now };
  if (patch.active !== undefined) values.active = patch.active ? 1 : 0;
  if (patch.scopes !== undefined) values.scopes = patch.scopes.join(' ');
  await db.updateTable('oauth_clients').set(values).where('client_id', '=', clientId).execute();
  return findOAuthClient(db, clientId);
}

export async function deleteOAuthClient(db: Executor, clientId: string): Promise<boolean> {
  const result = await db.deleteFrom('oauth_clients').where('client_id', '=', clientId).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}
