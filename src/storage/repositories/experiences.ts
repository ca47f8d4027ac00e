import type { Executor } from '../database.js';
import type { ExperiencesTable, PrizesTable } from '../tables/index.js';

export type PrizeKind = PrizesTable['kind'];

export interface Prize {
  id: string;
  bucket: string;
  title: string;
  description: string;
  value: number;
  quantity: number;
  kind: PrizeKind;
  stock: number | null;
}

export interface Experience {
  id: string;
  accountId: string;
  name: string;
  title: string;
  active: boolean;
  events: string[];
  prizes: Prize[];
  createdAt: number;
  updatedAt: number;
}

export function toPrize(row: PrizesTable): Prize {
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

export function toExperience(row: ExperiencesTable, prizes: PrizesTable[]): Experience {
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
  const unlimited = await db
    .selectFrom('prizes')
    .select('id')
    .where('experience_id', '=', experienceId)
    .where('id', '=', prizeId)
    .where('stock', 'is', null)
    .executeTakeFirst();
  return unlimited !== undefined;
}
