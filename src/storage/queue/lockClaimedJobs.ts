import { isPostgres } from '../migrations/types.js';
import type { Executor } from '../database.js';
import type { ClaimedJob } from './job.js';

/**
 * First statement of a job's transaction: keeps only the jobs whose lease this worker still
 * holds, and on PostgreSQL row-locks them until commit so no other worker can re-claim them
 * meanwhile (its SKIP LOCKED passes them by). A job whose lease was lost must not be worked on.
 */
export async function lockClaimedJobs<J extends ClaimedJob>(db: Executor, jobs: J[]): Promise<J[]> {
  if (jobs.length === 0) return [];
  const rows = await db
    .selectFrom('jobs')
    .select(['id', 'locked_by'])
    .where('id', 'in', jobs.map((job) => job.id))
    .$if(isPostgres(db as never), (qb) => qb.forUpdate())
    .execute();
  const held = new Map(rows.map((row) => [row.id, row.locked_by]));
  return jobs.filter((job) => held.get(job.id) === job.lease);
}
