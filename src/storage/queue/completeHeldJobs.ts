import { sql } from 'kysely';
import type { Executor } from '../database.js';
import { isPostgres } from '../migrations/types.js';
import { precompiled } from '../precompiled.js';
import type { ClaimedJob } from './job.js';

/**
 * One statement whatever the batch: the (id, lease) pairs travel as one JSON parameter, so the
 * SQL text never changes and is prepared once. Built per batch with Kysely (an `or` of one
 * `id = ? and locked_by = ?` per job), every batch size was a new text to compile and prepare.
 */
const deleteHeld = precompiled((db, pairs: string) =>
  isPostgres(db as never)
    ? sql<{ id: string }>`delete from jobs j using jsonb_array_elements(${pairs}::jsonb) e where j.id = e ->> 0 and j.locked_by = e ->> 1 returning j.id`
    : sql<{ id: string }>`delete from jobs where id in (select j.id from json_each(${pairs}) e join jobs j on j.id = e.value ->> 0 and j.locked_by = e.value ->> 1) returning id`,
);

/**
 * Deletes the jobs still held under the lease each was claimed with and returns their ids; a job
 * whose lease was lost (another worker took it over) is left alone and missing from the result.
 * For work that is recorded only if its job was still held, in the same transaction.
 */
export async function completeHeldJobs(db: Executor, jobs: readonly ClaimedJob[]): Promise<Set<string>> {
  if (jobs.length === 0) return new Set();
  const rows = await deleteHeld(db, JSON.stringify(jobs.map((job) => [job.id, job.lease])));
  return new Set(rows.map((row) => row.id));
}
