import type { Executor } from '../database.js';
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
 * Heartbeat for jobs still running in this process: one statement renews every lease that is
 * still ours. Jobs another worker took over are left alone (their handler will find the lease lost).
 */
export async function extendJobLeases(db: Executor, jobs: ClaimedJob[], until: number, now = Date.now()): Promise<void> {
  if (jobs.length === 0) return;
  await db
    .updateTable('jobs')
    .set({ run_at: until, updated_at: now })
    .where((eb) => eb.or(jobs.map((job) => eb.and([eb('id', '=', job.id), eb('locked_by', '=', job.lease)]))))
    .execute();
  for (const job of jobs) job.leaseUntil = until;
}
