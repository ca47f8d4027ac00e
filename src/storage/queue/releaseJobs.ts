import { sql } from 'kysely';
import type { Executor } from '../database.js';
import type { ClaimedJob } from './job.js';

/**
 * Gives leased jobs back untouched (graceful stop before they ran): due now, and the claim does
 * not count as an attempt. Jobs whose lease was already lost are left alone.
 */
export async function releaseJobs(db: Executor, jobs: ClaimedJob[], now = Date.now()): Promise<void> {
  for (const job of jobs) {
    await db
      .updateTable('jobs')
      .set({ run_at: now, locked_by: null, locked_at: null, attempts: sql`attempts - 1`, updated_at: now })
      .where('id', '=', job.id)
      .where('locked_by', '=', job.lease)
      .execute();
  }
}
