import type { Executor } from '../database.js';
import type { TokenRevocationsTable } from '../tables/index.js';

export type TokenRevocationRow = TokenRevocationsTable;

/** PostgreSQL returns bigint columns as strings. */
function toRow(row: TokenRevocationsTable): TokenRevocationRow {
  const ms = (value: number | null) => (value === null ? null : Number(value));
  return { ...row, issued_before: ms(row.issued_before), changed_at: Number(row.changed_at), expires_at: ms(row.expires_at) };
}

/** Writes the subject's revocation (in the caller's transaction) and deletes the rows that can refuse nothing any more. */
export async function saveTokenRevocation(db: Executor, row: TokenRevocationRow): Promise<void> {
  await db
    .insertInto('token_revocations')
    .values(row)
    .onConflict((oc) => oc.columns(['kind', 'subject_id']).doUpdateSet({ refused: row.refused, issued_before: row.issued_before, changed_at: row.changed_at, expires_at: row.expires_at }))
    .execute();
  await db.deleteFrom('token_revocations').where('expires_at', '<', row.changed_at).execute();
}

/** Every revocation that may still refuse a valid token. */
export async function listTokenRevocations(db: Executor, now: number): Promise<TokenRevocationRow[]> {
  const rows = await db
    .selectFrom('token_revocations')
    .selectAll()
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
    .execute();
  return rows.map(toRow);
}

/** The revocations written after `since` (by their writer's clock): what a refresh reads, through the `changed_at` index. */
export async function tokenRevocationsChangedSince(db: Executor, since: number): Promise<TokenRevocationRow[]> {
  return (await db.selectFrom('token_revocations').selectAll().where('changed_at', '>', since).execute()).map(toRow);
}
