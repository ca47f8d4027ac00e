import type { Executor } from '../database.js';
import type { ConsoleLinksTable } from '../tables/index.js';
import type { Page } from './page.js';
import type { ConsoleLink } from '../../domain/tokens/console-link.js';

function toConsoleLink(row: ConsoleLinksTable): ConsoleLink {
  return {
    id: row.id,
    accountId: row.account_id,
    createdAt: Number(row.created_at),
    expiresAt: Number(row.expires_at),
    tokenTtlMs: Number(row.token_ttl_ms),
    usedAt: row.used_at === null ? null : Number(row.used_at),
    revokedAt: row.revoked_at === null ? null : Number(row.revoked_at),
  };
}

export async function insertConsoleLink(db: Executor, row: ConsoleLinksTable): Promise<ConsoleLink> {
  await db.insertInto('console_links').values(row).execute();
  return toConsoleLink(row);
}

/**
 * Marks the link whose code hashes to `codeHash` used, if it is unused, unrevoked, unexpired and
 * its account active, and returns it; otherwise undefined. One UPDATE: of two exchanges of the same code at
 * once, exactly one changes the row (the other's `used_at is null` no longer holds), on both
 * databases.
 */
export async function useConsoleLink(db: Executor, codeHash: string, now: number): Promise<ConsoleLink | undefined> {
  const row = await db
    .updateTable('console_links')
    .set({ used_at: now })
    .where('code_hash', '=', codeHash)
    .where('used_at', 'is', null)
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', now)
    .where('account_id', 'in', (eb) => eb.selectFrom('accounts').select('id').where('active', '=', 1))
    .returningAll()
    .executeTakeFirst();
  return row && toConsoleLink(row);
}

/** Whether any link has this code (used, expired or not): tells a guess from a spent code. */
export async function consoleLinkExists(db: Executor, codeHash: string): Promise<boolean> {
  return (await db.selectFrom('console_links').select('id').where('code_hash', '=', codeHash).executeTakeFirst()) !== undefined;
}

/** Housekeeping: links expired more than `before` ago are dead weight (their codes can never be used). */
export async function deleteExpiredConsoleLinks(db: Executor, before: number): Promise<number> {
  const result = await db.deleteFrom('console_links').where('expires_at', '<', before).executeTakeFirst();
  return Number(result.numDeletedRows);
}

export async function findConsoleLink(db: Executor, id: string): Promise<ConsoleLink | undefined> {
  const row = await db.selectFrom('console_links').selectAll().where('id', '=', id).executeTakeFirst();
  return row && toConsoleLink(row);
}

/** An account's links, oldest first (ids sort by creation). */
export async function listConsoleLinks(db: Executor, accountId: string, page: Page = {}): Promise<ConsoleLink[]> {
  let query = db.selectFrom('console_links').selectAll().where('account_id', '=', accountId).orderBy('id');
  if (page.after !== undefined) query = query.where('id', '>', page.after);
  if (page.limit !== undefined) query = query.limit(page.limit);
  return (await query.execute()).map(toConsoleLink);
}

/** Marks the link revoked; false when it already was. */
export async function markConsoleLinkRevoked(db: Executor, id: string, now: number): Promise<boolean> {
  const result = await db.updateTable('console_links').set({ revoked_at: now }).where('id', '=', id).where('revoked_at', 'is', null).executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}
