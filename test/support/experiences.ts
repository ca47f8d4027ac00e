import { randomBytes } from 'node:crypto';
import type { Executor } from '../../src/storage/database.js';
import type { PrizesTable } from '../../src/storage/tables/index.js';
import type { TestApp } from './test-app.js';
import type { ClientCredentials } from './test-database.js';

interface PrizeSpec {
  id?: string;
  bucket?: string;
  title?: string;
  description?: string;
  value?: number;
  quantity?: number;
  kind?: PrizesTable['kind'];
  /** null = unlimited (the default). */
  stock?: number | null;
}

export interface ExperienceSpec {
  name?: string;
  title?: string;
  active?: boolean;
  events?: string[];
  prizes?: PrizeSpec[];
}

export interface InsertedExperience {
  id: string;
  name: string;
  title: string;
  prizes: Required<PrizeSpec>[];
}

/** Inserts an experience and its prizes straight into the tables (the admin API is tested elsewhere). */
export async function insertExperience(db: Executor, accountId: string, spec: ExperienceSpec = {}): Promise<InsertedExperience> {
  const suffix = randomBytes(4).toString('hex');
  const id = `exp_test_${suffix}`;
  const name = spec.name ?? `campaign-${suffix}`;
  const title = spec.title ?? `Campaign ${suffix}`;
  const now = Date.now();
  await db
    .insertInto('experiences')
    .values({
      id,
      account_id: accountId,
      name,
      title,
      active: spec.active === false ? 0 : 1,
      events: JSON.stringify(spec.events ?? []),
      created_at: now,
      updated_at: now,
    })
    .execute();
  const prizes = (spec.prizes ?? []).map((prize, index) => ({
    id: prize.id ?? `prize-${index + 1}`,
    bucket: prize.bucket ?? `bucket-${index + 1}`,
    title: prize.title ?? `Prize ${index + 1}`,
    description: prize.description ?? `Description of prize ${index + 1}`,
    value: prize.value ?? 10,
    quantity: prize.quantity ?? 1,
    kind: prize.kind ?? 'coupon',
    stock: prize.stock === undefined ? null : prize.stock,
  }));
  if (prizes.length > 0) {
    await db
      .insertInto('prizes')
      .values(prizes.map((prize, position) => ({ experience_id: id, position, ...prize })))
      .execute();
  }
  return { id, name, title, prizes };
}

export async function prizeStock(db: Executor, experienceId: string, prizeId: string): Promise<number | null> {
  const row = await db.selectFrom('prizes').select('stock').where('experience_id', '=', experienceId).where('id', '=', prizeId).executeTakeFirstOrThrow();
  return row.stock;
}

/**
 * A fresh client account with one experience (named `summer` unless given) and a token of all its
 * scopes: each test gets its own account, so tests never see each other's subscriptions.
 */
export async function tenantWithExperience(t: TestApp, experience: ExperienceSpec): Promise<{ client: ClientCredentials; token: string }> {
  const client = await t.createClientAccount();
  const token = await t.token(client);
  await insertExperience(t.deps.db, client.accountId, { name: 'summer', ...experience });
  return { client, token };
}
