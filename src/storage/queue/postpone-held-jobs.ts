import { sql } from 'kysely';
import type { Executor } from '../database.js';
import { isPostgres } from '../migrations/types.js';
import { precompiled } from '../precompiled.js';
import type { ClaimedJob } from './job.js';

/**
 * One statement whatever the batch: the (id, lease, run_at) triples travel as one JSON parameter.
 * `attempts - 1` undoes the claim's count (claimDueJobs, or enqueueJobs with leaseTo, wrote 1 more).
 */
const postponeHeld = precompiled<[triples: string, note: string, now: number], { id: string }>((db, triples, note, now) =>
  isPostgres(db as never)
    ? sql<{ id: string }>`update jobs j set run_at = (e ->> 2)::bigint, locked_by = null, locked_at = null, attempts = greatest(j.attempts - 1, 0),
          last_error = ${note}, updated_at = ${now}::bigint
        from jsonb_array_elements(${triples}::jsonb) e where j.id = e ->> 0 and j.locked_by = e ->> 1 returning j.id`
    : sql<{ id: string }>`update jobs set run_at = e.value ->> 2, locked_by = null, locked_at = null, attempts = max(jobs.attempts - 1, 0),
          last_error = ${note}, updated_at = ${now}
        from json_each(${triples}) e where jobs.id = e.value ->> 0 and jobs.locked_by = e.value ->> 1 returning jobs.id`,
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
  const triples = postponements.map(({ job, runAt }) => [job.id, job.lease, Math.round(runAt)]);
  const rows = await postponeHeld(db, JSON.stringify(triples), options.note, options.now ?? Date.now());
  return new Set(rows.map((row) => row.id));
}
