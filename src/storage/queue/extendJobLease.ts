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
