import { sql } from 'kysely';
import type { Executor } from '../database.js';
import { isPostgres } from '../migrations/types.js';
import { precompiled } from '../precompiled.js';
import { LeaseLostError, type ClaimedJob } from './job.js';

/** Keeps a long-running job (a slow callback, say) from being re-claimed: its lease ends at `until`. */
export async function extendJobLease(db: Executor, job: ClaimedJob, until: number, now = Date.now()): Promise<void> {
  const result = await db
    .updateTable('jobs')
    .set({ run_at: until, updated_at: now })
    .where('id', '=', job.id)
    .where('locked_by', '=', job.lease)
    .executeTakeFirst();
  if (Number(result.numUpdatedRows) !== 1) throw new LeaseLostError(job.id);
  job.leaseUntil = until;
}

/**
 * One statement whatever the number of jobs: the (id, lease) pairs travel as one JSON parameter.
 * On PostgreSQL the rows are taken `FOR UPDATE SKIP LOCKED`: a row locked right now is one whose
 * outcome this worker is committing (it is about to be deleted), so it needs no renewal, and a
 * heartbeat that waited for it could deadlock with that commit (both lock many rows, in different
 * orders; PostgreSQL breaks the tie after `deadlock_timeout`, a second, by aborting one of them).
 */
const renewHeld = precompiled<[pairs: string, until: number, now: number], { id: string }>((db, pairs, until, now) =>
  isPostgres(db as never)
    ? sql<{ id: string }>`update jobs set run_at = ${until}::bigint, updated_at = ${now}::bigint where id in (
        select j.id from jobs j join jsonb_array_elements(${pairs}::jsonb) e on j.id = e ->> 0 and j.locked_by = e ->> 1
        for update of j skip locked) returning id`
    : sql<{ id: string }>`update jobs set run_at = ${until}, updated_at = ${now} where id in (
        select j.id from json_each(${pairs}) e join jobs j on j.id = e.value ->> 0 and j.locked_by = e.value ->> 1) returning id`,
);

/**
 * Heartbeat for jobs still running in this process: one statement renews every lease that is
 * still ours. Jobs another worker took over are left alone (their handler will find the lease
 * lost), and so are jobs being completed at this moment. Returns how many leases it renewed.
 */
export async function extendJobLeases(db: Executor, jobs: readonly ClaimedJob[], until: number, now = Date.now()): Promise<number> {
  if (jobs.length === 0) return 0;
  const renewed = new Set((await renewHeld(db, JSON.stringify(jobs.map((job) => [job.id, job.lease])), until, now)).map((row) => row.id));
  for (const job of jobs) if (renewed.has(job.id)) job.leaseUntil = until;
  return renewed.size;
}
