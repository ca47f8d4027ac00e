import { sql } from 'kysely';
import type { Executor } from '../database.js';
import { isPostgres } from '../migrations/types.js';
import { precompiled } from '../precompiled.js';
import { TRANSACTION_LEASE, type ClaimedJob } from './job.js';

/**
 * One statement whatever the batch: the (id, lease) pairs travel as one JSON parameter, so the
 * SQL text never changes and is prepared once. A job held by its transaction has no lease row:
 * its pair carries null, and `is not distinct from` matches it.
 */
const deleteHeld = precompiled((db, pairs: string) =>
  isPostgres(db as never)
    ? sql<{ id: string }>`delete from jobs j using jsonb_array_elements(${pairs}::jsonb) e where j.id = e ->> 0 and j.locked_by is not distinct from (e ->> 1) returning j.id`
    : sql<{ id: string }>`delete from jobs where id in (select j.id from json_each(${pairs}) e join jobs j on j.id = e.value ->> 0 and j.locked_by is (e.value ->> 1)) returning id`,
);

/**
 * The one way to complete jobs: deletes those still held the way each was taken (its lease
 * token, or its transaction) and returns their ids. A job another worker took over is left alone
 * and missing from the result: a caller that needs all of them throws LeaseLostError to roll its
 * transaction back; the attempt log records only the attempts whose jobs were held.
 */
export async function completeHeldJobs(db: Executor, jobs: readonly ClaimedJob[]): Promise<Set<string>> {
  if (jobs.length === 0) return new Set();
  const rows = await deleteHeld(db, JSON.stringify(jobs.map((job) => [job.id, job.lease === TRANSACTION_LEASE ? null : job.lease])));
  return new Set(rows.map((row) => row.id));
}
