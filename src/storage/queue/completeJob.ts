import type { Executor } from '../database.js';
import { LeaseLostError, type ClaimedJob } from './job.js';

/**
 * Deletes finished jobs, only under this worker's lease. Called inside the transaction of the
 * job's effects, it makes them exactly-once: if the lease was lost the error rolls it all back.
 */
export async function completeJobs(db: Executor, jobs: ClaimedJob[]): Promise<void> {
  const byLease = new Map<string, string[]>();
  for (const job of jobs) byLease.set(job.lease, [...(byLease.get(job.lease) ?? []), job.id]);
  for (const [lease, ids] of byLease) {
    const result = await db.deleteFrom('jobs').where('id', 'in', ids).where('locked_by', '=', lease).executeTakeFirst();
    if (Number(result.numDeletedRows) !== ids.length) throw new LeaseLostError(ids.join(','));
  }
}

export async function completeJob(db: Executor, job: ClaimedJob): Promise<void> {
  await completeJobs(db, [job]);
}
