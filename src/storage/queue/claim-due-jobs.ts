import { sql } from 'kysely';
import { dialectOf } from '../dialect.js';
import type { Executor } from '../database.js';
import { dueJobs } from './due-jobs.js';
import type { JobsTable } from '../tables/index.js';
import { byCreation, newLease, toClaimedJob, type ClaimedJob } from './job.js';

export interface ClaimOptions {
  workerId: string;
  kinds: readonly string[];
  limit: number;
  leaseMs: number;
  now?: number;
}

/**
 * Leases up to `limit` due jobs of the given kinds in one statement: `run_at` moves to the end of
 * the lease (so an abandoned job is simply due again later), `attempts` counts the claim, and
 * `locked_by` gets a token unique to this claim. Which jobs: `dueJobs` (PostgreSQL skips rows
 * another worker is claiming; SQLite has a single writer). The worker claims this way only the
 * jobs of a transactional batch that failed, to run them one by one (transactional-loop.ts).
 */
export async function claimDueJobs(db: Executor, options: ClaimOptions): Promise<ClaimedJob[]> {
  if (options.kinds.length === 0 || options.limit <= 0) return [];
  const now = options.now ?? Date.now();
  const lease = newLease(options.workerId);
  const due = dueJobs({ kinds: options.kinds, limit: options.limit, now, dialect: dialectOf(db) });
  const { rows } = await sql<JobsTable>`${due} update jobs set locked_by = ${lease}, locked_at = ${now}, run_at = ${now + options.leaseMs}, attempts = attempts + 1, updated_at = ${now}
      where id in (select id from due) returning *`.execute(db);
  return rows.map((row) => toClaimedJob(row)).sort(byCreation);
}
