import type { Experience, Prize } from '../../domain/experiences/experience.js';
import type { Page } from './page.js';
import type { Executor } from '../database.js';
import type { ExperiencesTable, PrizesTable } from '../tables/index.js';

function toPrize(row: PrizesTable): Prize {
  return {
    id: row.id,
    bucket: row.bucket,
    title: row.title,
    description: row.description,
    value: Number(row.value),
    quantity: row.quantity,
    kind: row.kind,
    stock: row.stock,
  };
}

function toExperience(row: ExperiencesTable, prizes: PrizesTable[]): Experience {
  return {
    id: row.id,
    accountId: row.account_id,
    name: row.name,
    title: row.title,
    active: Boolean(row.active),
    events: JSON.parse(row.events) as string[],
    prizes: [...prizes].sort((a, b) => a.position - b.position).map(toPrize),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

async function withPrizes(db: Executor, row: ExperiencesTable | undefined): Promise<Experience | undefined> {
  if (!row) return undefined;
  const prizes = await db.selectFrom('prizes').selectAll().where('experience_id', '=', row.id).execute();
  return toExperience(row, prizes);
}

/** The experience a reward request names (`experience` = the experience's `name`), with its prizes. */
export async function findExperienceByName(db: Executor, accountId: string, name: string): Promise<Experience | undefined> {
  const row = await db.selectFrom('experiences').selectAll().where('account_id', '=', accountId).where('name', '=', name).executeTakeFirst();
  return withPrizes(db, row);
}

export async function findExperienceById(db: Executor, accountId: string, id: string): Promise<Experience | undefined> {
  const row = await db.selectFrom('experiences').selectAll().where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst();
  return withPrizes(db, row);
}

/**
 * Takes one unit of a prize's stock atomically: a single conditional UPDATE, so concurrent
 * requests can never oversell. Unlimited prizes (stock null) always succeed.
 * Returns false when the prize is out of stock or no longer exists.
 */
export async function takePrizeStock(db: Executor, experienceId: string, prizeId: string): Promise<boolean> {
  const limited = await db
    .updateTable('prizes')
    .set((eb) => ({ stock: eb('stock', '-', 1) }))
    .where('experience_id', '=', experienceId)
    .where('id', '=', prizeId)
    .where('stock', '>', 0)
    .executeTakeFirst();
  if (Number(limited.numUpdatedRows) > 0) return true;
  const unlimited = await db.selectFrom('prizes').select('id').where('experience_id', '=', experienceId).where('id', '=', prizeId).where('stock', 'is', null).executeTakeFirst();
  return unlimited !== undefined;
}

// ---- Operator CRUD (admin API and `rewards experiences import`) ----

/** A prize as written by the operator; `stock` undefined means "keep the stored stock" on update. */
export interface PrizeWrite extends Omit<Prize, 'stock'> {
  stock?: number | null;
}

export async function listExperiences(db: Executor, accountId: string, page: Page = {}): Promise<Experience[]> {
  let query = db.selectFrom('experiences').selectAll().where('account_id', '=', accountId).orderBy('id');
  if (page.after !== undefined) query = query.where('id', '>', page.after);
  if (page.limit !== undefined) query = query.limit(page.limit);
  const rows = await query.execute();
  if (rows.length === 0) return [];
  const prizes = await db
    .selectFrom('prizes')
    .selectAll()
    .where(
      'experience_id',
      'in',
      rows.map((row) => row.id),
    )
    .execute();
  const byExperience = new Map<string, PrizesTable[]>();
  for (const prize of prizes) byExperience.set(prize.experience_id, [...(byExperience.get(prize.experience_id) ?? []), prize]);
  return rows.map((row) => toExperience(row, byExperience.get(row.id) ?? []));
}

export async function insertExperience(db: Executor, row: ExperiencesTable, prizes: PrizeWrite[]): Promise<void> {
  await db.insertInto('experiences').values(row).execute();
  await insertPrizes(
    db,
    row.id,
    prizes.map((prize, position) => ({ prize, position })),
  );
}

export async function updateExperienceRow(db: Executor, id: string, values: Partial<Pick<ExperiencesTable, 'name' | 'title' | 'active' | 'events' | 'updated_at'>>): Promise<void> {
  if (Object.keys(values).length > 0) await db.updateTable('experiences').set(values).where('id', '=', id).execute();
}

async function insertPrizes(db: Executor, experienceId: string, prizes: { prize: PrizeWrite; position: number }[]): Promise<void> {
  if (prizes.length === 0) return;
  await db
    .insertInto('prizes')
    .values(prizes.map(({ prize, position }) => ({ ...prizeColumns(prize), stock: prize.stock ?? null, experience_id: experienceId, id: prize.id, position })))
    .execute();
}

function prizeColumns(prize: PrizeWrite) {
  return { bucket: prize.bucket, title: prize.title, description: prize.description, value: prize.value, quantity: prize.quantity, kind: prize.kind };
}

/**
 * Makes the experience's prizes exactly `prizes`, in that order. A prize whose id stays is
 * UPDATEd in place rather than deleted and re-inserted: when its `stock` is omitted the column is
 * not written at all, so a unit taken concurrently by `takePrizeStock` is never given back.
 */
export async function replacePrizes(db: Executor, experienceId: string, prizes: PrizeWrite[]): Promise<void> {
  const existing = new Set((await db.selectFrom('prizes').select('id').where('experience_id', '=', experienceId).execute()).map((row) => row.id));
  const keep = prizes.map((prize) => prize.id).filter((id) => existing.has(id));
  let removal = db.deleteFrom('prizes').where('experience_id', '=', experienceId);
  if (keep.length > 0) removal = removal.where('id', 'not in', keep);
  await removal.execute();
  const added: { prize: PrizeWrite; position: number }[] = [];
  for (const [position, prize] of prizes.entries()) {
    if (!existing.has(prize.id)) {
      added.push({ prize, position });
      continue;
    }
    await db
      .updateTable('prizes')
      .set({ ...prizeColumns(prize), position, ...(prize.stock !== undefined ? { stock: prize.stock } : {}) })
      .where('experience_id', '=', experienceId)
      .where('id', '=', prize.id)
      .execute();
  }
  await insertPrizes(db, experienceId, added);
}

/** Deletes the experience and (by cascade) its prizes; false when it is not the account's. */
export async function deleteExperience(db: Executor, accountId: string, id: string): Promise<boolean> {
  const result = await db.deleteFrom('experiences').where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}
