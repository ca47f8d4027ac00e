import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { dialectOf } from '../dialect.js';
import type { Executor } from '../database.js';
import { dueJobs } from './due-jobs.js';
import type { JobsTable } from '../tables/index.js';
import { byCreation, toClaimedJob, type ClaimedJob } from './job.js';

export interface ClaimOptions {
  workerId: string;
  kinds: readonly string[];
  limit: number;
  leaseMs: number;
  now?: number;
  /** Groups whose jobs this claim leaves to others (their share of the worker's slots is taken). */
  excludeGroups?: readonly string[];
  /** Jobs this claim must not return: the claimer's own runs whose lease may have ended (delivery-ownership.ts). */
  excludeIds?: readonly string[];
}

/** A lease token unique to one claim (or one batch's hand-off) of this worker: its id and 72 random bits. */
export function newLease(workerId: string): string {
  return `${workerId}:${randomBytes(9).toString('base64url')}`;
}

/**
 * Leases up to `limit` due jobs of the given kinds in one statement: `run_at` moves to the end of
 * the lease (so an abandoned job is simply due again later), `attempts` counts the claim, and
 * `locked_by` gets a token unique to this claim. Which jobs: `dueJobs` (PostgreSQL skips rows
 * another worker is claiming; SQLite has a single writer), without those of `excludeGroups` and
 * `excludeIds`.
 */
export async function claimDueJobs(db: Executor, options: ClaimOptions): Promise<ClaimedJob[]> {
  if (options.kinds.length === 0 || options.limit <= 0) return [];
  const now = options.now ?? Date.now();
  const lease = newLease(options.workerId);
  const due = dueJobs({ kinds: options.kinds, limit: options.limit, now, dialect: dialectOf(db), excludeGroups: options.excludeGroups, excludeIds: options.excludeIds });
  const { rows } = await sql<JobsTable>`${due} update jobs set locked_by = ${lease}, locked_at = ${now}, run_at = ${now + options.leaseMs}, attempts = attempts + 1, updated_at = ${now}
      where id in (select id from due) returning *`.execute(db);
  return rows.map((row) => toClaimedJob(row)).sort(byCreation);
}
