import { sql } from 'kysely';
import type { Executor } from '../database.js';
import { dialectOf } from '../dialect.js';
import { precompiled } from '../precompiled.js';
import { TRANSACTION_LEASE, type ClaimedJob } from './job.js';

/**
 * One statement whatever the batch: the (id, lease) pairs travel as one JSON parameter (`records`), so the
 * SQL text never changes and is prepared once. A job held by its transaction has no lease row:
 * its lease is null, and `is not distinct from` matches it.
 */
const deleteHeld = precompiled(
  (db, held: string) =>
    sql<{ id: string }>`delete from jobs where id in (select j.id from ${dialectOf(db).records(held, 'h', { job_id: 'text', lease: 'text' })}
      join jobs j on j.id = h.job_id and j.locked_by is not distinct from h.lease) returning id`,
);

/**
 * The one way to complete jobs: deletes those still held the way each was taken (its lease
 * token, or its transaction) and returns their ids. A job another worker took over is left alone
 * and missing from the result: a caller that needs all of them throws LeaseLostError to roll its
 * transaction back; the attempt log records only the attempts whose jobs were held.
 */
export async function completeHeldJobs(db: Executor, jobs: readonly ClaimedJob[]): Promise<Set<string>> {
  if (jobs.length === 0) return new Set();
  const rows = await deleteHeld(db, JSON.stringify(jobs.map((job) => ({ job_id: job.id, lease: job.lease === TRANSACTION_LEASE ? null : job.lease }))));
  return new Set(rows.map((row) => row.id));
}
