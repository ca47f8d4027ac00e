import { sql } from 'kysely';
import type { Executor } from '../database.js';
import { dialectOf } from '../dialect.js';
import { precompiled } from '../precompiled.js';
import type { ClaimedJob } from './job.js';

/**
 * One statement whatever the batch: the (id, lease, run_at) triples travel as one JSON parameter (`records`).
 * `attempts - 1` undoes the claim's count (claimDueJobs, or enqueueJobs with leaseTo, wrote 1 more).
 */
const postponeHeld = precompiled<[postponed: string, note: string, now: number], { id: string }>(
  (db, postponed, note, now) =>
    sql<{ id: string }>`update jobs as j set run_at = p.due_at, locked_by = null, locked_at = null,
          attempts = case when j.attempts > 0 then j.attempts - 1 else 0 end, last_error = ${note}, updated_at = cast(${now} as bigint)
        from ${dialectOf(db).records(postponed, 'p', { job_id: 'text', lease: 'text', due_at: 'bigint' })}
        where j.id = p.job_id and j.locked_by = p.lease returning id`,
);

export interface Postponement {
  job: ClaimedJob;
  /** When the job is due again. */
  runAt: number;
}

/**
 * Gives jobs back unrun: each job still held under its written lease is due again at its `runAt`,
 * unlocked, and its claim no longer counts among its attempts (a wait is not a failed run). `note`
 * goes to `last_error` (what a later operation can find the postponed jobs by). Returns the ids
 * postponed; a job another worker took over is left alone and missing from the result.
 */
export async function postponeHeldJobs(db: Executor, postponements: readonly Postponement[], options: { note: string; now?: number }): Promise<Set<string>> {
  if (postponements.length === 0) return new Set();
  const postponed = postponements.map(({ job, runAt }) => ({ job_id: job.id, lease: job.lease, due_at: Math.round(runAt) }));
  const rows = await postponeHeld(db, JSON.stringify(postponed), options.note, options.now ?? Date.now());
  return new Set(rows.map((row) => row.id));
}
