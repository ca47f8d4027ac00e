import type { Page } from './page.js';
import type { Executor } from '../database.js';
import type { AccountsTable } from '../tables/index.js';
import { newId } from '../../domain/ids.js';
import type { Account } from '../../domain/accounts/account.js';

function toAccount(row: AccountsTable): Account {
  return { id: row.id, name: row.name, isOperator: Boolean(row.is_operator), active: Boolean(row.active), createdAt: row.created_at };
}

export async function insertAccount(db: Executor, input: { name: string; isOperator?: boolean }, now = Date.now()): Promise<Account> {
  const row: AccountsTable = { id: newId('acc', now), name: input.name, is_operator: input.isOperator ? 1 : 0, active: 1, created_at: now };
  await db.insertInto('accounts').values(row).execute();
  return toAccount(row);
}

export async function findAccountById(db: Executor, id: string): Promise<Account | undefined> {
  const row = await db.selectFrom('accounts').selectAll().where('id', '=', id).executeTakeFirst();
  return row && toAccount(row);
}

/** Resolves the CLI's `ID_OR_NAME` argument. */
export async function findAccountByIdOrName(db: Executor, idOrName: string): Promise<Account | undefined> {
  const row = await db
    .selectFrom('accounts')
    .selectAll()
    .where((eb) => eb.or([eb('id', '=', idOrName), eb('name', '=', idOrName)]))
    .orderBy('created_at')
    .executeTakeFirst();
  return row && toAccount(row);
}

export async function listAccounts(db: Executor, page: Page = {}): Promise<Account[]> {
  let query = db.selectFrom('accounts').selectAll().orderBy('id');
  if (page.after !== undefined) query = query.where('id', '>', page.after);
  if (page.limit !== undefined) query = query.limit(page.limit);
  return (await query.execute()).map(toAccount);
}

export async function updateAccount(db: Executor, id: string, patch: { name?: string; active?: boolean }): Promise<Account | undefined> {
  const values: Partial<AccountsTable> = {};
  if (patch.name !== undefined) values.name = patch.name;
  if (patch.active !== undefined) values.active = patch.active ? 1 : 0;
  if (Object.keys(values).length > 0) await db.updateTable('accounts').set(values).where('id', '=', id).execute();
  return findAccountById(db, id);
}
