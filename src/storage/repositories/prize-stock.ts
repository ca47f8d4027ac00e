import { dialectOf } from '../dialect.js';
import type { Executor } from '../database.js';
import { prizeKey, type StockLevel } from '../../domain/requests/allocation.js';

/**
 * Current stock of every prize of these experiences, for a processing batch. On PostgreSQL the
 * rows stay locked until commit, so concurrent batches allocate one after the other; SQLite has
 * a single writer. Missing prizes are simply absent (→ `unavailable`).
 */
export async function lockPrizeStock(db: Executor, experienceIds: string[]): Promise<Map<string, StockLevel>> {
  const levels = new Map<string, StockLevel>();
  if (experienceIds.length === 0) return levels;
  const query = db
    .selectFrom('prizes')
    .select(['experience_id', 'id', 'stock'])
    .where('experience_id', 'in', [...new Set(experienceIds)].sort())
    .orderBy('experience_id')
    .orderBy('id');
  const rows = await dialectOf(db).lockRows(query).execute();
  for (const row of rows) levels.set(prizeKey(row.experience_id, row.id), row.stock === null ? null : Number(row.stock));
  return levels;
}

/**
 * Takes `units` of a prize in one conditional UPDATE. It cannot oversell even without the lock
 * above: if fewer units are left than were allocated it changes nothing and returns false, and
 * the caller rolls its transaction back and retries.
 */
export async function takePrizeUnits(db: Executor, experienceId: string, prizeId: string, units: number): Promise<boolean> {
  const result = await db
    .updateTable('prizes')
    .set((eb) => ({ stock: eb('stock', '-', units) }))
    .where('experience_id', '=', experienceId)
    .where('id', '=', prizeId)
    .where('stock', '>=', units)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}
