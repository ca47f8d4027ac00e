import type { Db, Executor } from '../storage/database.js';
import { conflict, invalid, notFound, type FieldError } from '../domain/errors.js';
import { isForeignKeyViolation, isUniqueViolation } from '../storage/database-errors.js';
import {
  deleteExperience,
  findExperienceById,
  findExperienceByName,
  insertExperience,
  listExperiences as listExperienceRows,
  replacePrizes,
  updateExperienceRow,
  type PrizeWrite,
} from '../storage/repositories/experiences.js';
import type { Experience } from '../domain/experiences/experience.js';
import type { ExperiencesTable } from '../storage/tables/index.js';
import type { Page } from '../storage/repositories/page.js';
import { newId } from '../domain/ids.js';
import type { ExperienceCreateInput, ExperienceUpdateInput, PrizeInput } from '../domain/experiences/experience-schema.js';

/** What the experience endpoints' use cases need. */
export interface ExperiencesContext {
  db: Db;
  clock: () => number;
}

/** Rules across members, checked after the schema: prize ids must be unique within the experience. Paths start at `at`. */
function checkExperienceRules(input: ExperienceUpdateInput, at: string): FieldError[] {
  const errors: FieldError[] = [];
  const seen = new Set<string>();
  for (const [index, prize] of (input.prizes ?? []).entries()) {
    if (seen.has(prize.id)) errors.push({ path: `${at}.prizes.${index}.id`, message: `duplicate prize id "${prize.id}"` });
    seen.add(prize.id);
  }
  return errors;
}

/** An experience sent to the API: its paths are the request body's. */
function assertValid(input: ExperienceUpdateInput): void {
  const errors = checkExperienceRules(input, 'body');
  if (errors.length > 0) throw invalid('experience', errors);
}

function toPrizeWrite(prize: PrizeInput): PrizeWrite {
  return {
    id: prize.id,
    bucket: prize.bucket,
    title: prize.title,
    description: prize.description ?? '',
    value: prize.value,
    quantity: prize.quantity ?? 1,
    kind: prize.kind,
    stock: prize.stock,
  };
}

const nameTaken = (name: string) => conflict(`an experience named "${name}" already exists in this account`);

async function createIn(tx: Executor, accountId: string, input: ExperienceCreateInput, now: number): Promise<Experience> {
  assertValid(input);
  if (await findExperienceByName(tx, accountId, input.name)) throw nameTaken(input.name);
  const row: ExperiencesTable = {
    id: newId('exp', now),
    account_id: accountId,
    name: input.name,
    title: input.title,
    active: input.active === false ? 0 : 1,
    events: JSON.stringify(input.events ?? []),
    created_at: now,
    updated_at: now,
  };
  // A new prize without `stock` is unlimited.
  await insertExperience(
    tx,
    row,
    (input.prizes ?? []).map((prize) => ({ ...toPrizeWrite(prize), stock: prize.stock ?? null })),
  );
  return (await findExperienceById(tx, accountId, row.id))!;
}

/** PUT semantics: members given replace, members omitted stay; `prizes` replaces the whole list. */
async function replaceIn(tx: Executor, current: Experience, input: ExperienceUpdateInput, now: number): Promise<Experience> {
  assertValid(input);
  if (input.name !== undefined && input.name !== current.name && (await findExperienceByName(tx, current.accountId, input.name))) {
    throw nameTaken(input.name);
  }
  await updateExperienceRow(tx, current.id, {
    ...(input.name !== undefined ? { name: input.name } : {}),
    ...(input.title !== undefined ? { title: input.title } : {}),
    ...(input.active !== undefined ? { active: input.active ? 1 : 0 } : {}),
    ...(input.events !== undefined ? { events: JSON.stringify(input.events) } : {}),
    updated_at: now,
  });
  if (input.prizes !== undefined) await replacePrizes(tx, current.id, input.prizes.map(toPrizeWrite));
  return (await findExperienceById(tx, current.accountId, current.id))!;
}

/** Runs `work` in one transaction; a unique-name race that slipped past the pre-check is a conflict too. */
async function inTransaction<T>(db: Db, work: (tx: Executor) => Promise<T>): Promise<T> {
  try {
    return await db.transaction().execute(work);
  } catch (error) {
    if (isUniqueViolation(error)) throw conflict('an experience with that name already exists in this account');
    throw error;
  }
}

/** The account's experience with its prizes; another account's (or an unknown one) is not found. */
export async function getExperience(db: Executor, accountId: string, id: string): Promise<Experience> {
  const experience = await findExperienceById(db, accountId, id);
  if (!experience) throw notFound('experience');
  return experience;
}

/** The account's experiences, or one page of them, in creation order. */
export function listExperiences(db: Executor, accountId: string, page: Page = {}): Promise<Experience[]> {
  return listExperienceRows(db, accountId, page);
}

export function createExperience(db: Db, accountId: string, input: ExperienceCreateInput, now = Date.now()): Promise<Experience> {
  return inTransaction(db, (tx) => createIn(tx, accountId, input, now));
}

export function updateExperience(db: Db, accountId: string, id: string, input: ExperienceUpdateInput, now = Date.now()): Promise<Experience> {
  return inTransaction(db, async (tx) => {
    const current = await findExperienceById(tx, accountId, id);
    if (!current) throw notFound('experience');
    return replaceIn(tx, current, input, now);
  });
}

/** Deletes the experience and its prizes; false when it is not the account's. Still referenced (by requests): a conflict. */
export async function removeExperience(db: Db, accountId: string, id: string): Promise<boolean> {
  try {
    return await deleteExperience(db, accountId, id);
  } catch (error) {
    // Deactivating it (PUT active:false) is the way out.
    if (isForeignKeyViolation(error)) throw conflict('this experience is still in use, so it cannot be deleted; switch it off instead');
    throw error;
  }
}

export interface ImportedExperience {
  id: string;
  name: string;
  created: boolean;
}

/**
 * Creates each experience whose name is new to the account and replaces each one that exists.
 * The inputs come validated with the create schema, so members a file omits already hold their
 * defaults: an existing experience ends up exactly as the file defines it, except that a kept
 * prize whose `stock` is omitted keeps its remaining stock (stock is consumed at run time, and
 * re-importing the same file must not refill it). All or nothing: one transaction.
 */
export function importExperiences(db: Db, accountId: string, inputs: ExperienceCreateInput[], now = Date.now()): Promise<ImportedExperience[]> {
  const errors: FieldError[] = [];
  const names = new Set<string>();
  for (const [index, input] of inputs.entries()) {
    if (names.has(input.name)) errors.push({ path: `${index}.name`, message: `name "${input.name}" appears more than once in the file` });
    names.add(input.name);
    errors.push(...checkExperienceRules(input, String(index)));
  }
  if (errors.length > 0) throw invalid('import file', errors);
  return inTransaction(db, async (tx) => {
    const imported: ImportedExperience[] = [];
    for (const input of inputs) {
      const existing = await findExperienceByName(tx, accountId, input.name);
      const saved = existing ? await replaceIn(tx, existing, input, now) : await createIn(tx, accountId, input, now);
      imported.push({ id: saved.id, name: saved.name, created: !existing });
    }
    return imported;
  });
}
