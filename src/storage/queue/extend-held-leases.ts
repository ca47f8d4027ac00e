import { sql } from 'kysely';
import type { Executor } from '../database.js';
import { dialectOf } from '../dialect.js';
import { precompiled } from '../precompiled.js';
import type { ClaimedJob } from './job.js';

/**
 * One statement whatever the number of jobs: the (id, lease) pairs travel as one JSON parameter (`records`).
 * On PostgreSQL the rows are taken `FOR UPDATE SKIP LOCKED`: a row locked right now is one whose
 * outcome this worker is committing (it is about to be deleted), so it needs no renewal, and a
 * renewal that waited for it could deadlock with that commit (both lock many rows, in different
 * orders; PostgreSQL breaks the tie after `deadlock_timeout`, a second, by aborting one of them).
 */
const renewHeld = precompiled<[held: string, until: number, now: number], { id: string }>((db, held, until, now) => {
  const dialect = dialectOf(db);
  return sql<{ id: string }>`update jobs set run_at = cast(${until} as bigint), updated_at = cast(${now} as bigint) where id in (
      select j.id from jobs j join ${dialect.records(held, 'h', { job_id: 'text', lease: 'text' })} on j.id = h.job_id and j.locked_by = h.lease
      ${dialect.rowLock({ of: 'j', skipLocked: true })}) returning id`;
});

/**
 * The heartbeat for jobs still running in this process: renews, in one statement, every lease of
 * the list still held, to `until`. Jobs another worker took over are left alone (their handler
 * will find them lost), and so are jobs being completed at this moment. Returns how many it renewed.
 */
export async function extendHeldLeases(db: Executor, jobs: readonly ClaimedJob[], until: number, now = Date.now()): Promise<number> {
  if (jobs.length === 0) return 0;
  const renewed = new Set((await renewHeld(db, JSON.stringify(jobs.map((job) => ({ job_id: job.id, lease: job.lease }))), until, now)).map((row) => row.id));
  for (const job of jobs) if (renewed.has(job.id)) job.leaseUntil = until;
  return renewed.size;
}
