import type { Executor } from '../database.js';
import { retryDelayMs, type ClaimedJob } from './job.js';

export interface FailOptions {
  now?: number;
  /** When to try again (default: the retryDelayMs schedule). Ignored once attempts are exhausted. */
  retryAt?: number;
}

/**
 * Records a failed attempt of a job still held under its lease: due again later, or, after
 * `maxAttempts` attempts, kept with state 'failed' and never claimed again. `'lost'` when another
 * worker had taken the job over (nothing is written then).
 */
export async function failHeldJob(db: Executor, job: ClaimedJob, error: unknown, options: FailOptions = {}): Promise<'retrying' | 'failed' | 'lost'> {
  const now = options.now ?? Date.now();
  const exhausted = job.attempts >= job.maxAttempts;
  const message = (error instanceof Error ? error.message : String(error)).slice(0, 2000);
  const result = await db
    .updateTable('jobs')
    .set({
      state: exhausted ? 'failed' : 'pending',
      run_at: exhausted ? now : (options.retryAt ?? now + retryDelayMs(job.attempts)),
      locked_by: null,
      locked_at: null,
      last_error: message,
      updated_at: now,
    })
    .where('id', '=', job.id)
    .where('locked_by', '=', job.lease)
    .executeTakeFirst();
  if (Number(result.numUpdatedRows) !== 1) return 'lost';
  return exhausted ? 'failed' : 'retrying';
}
