import { newId } from '../../domain/ids.js';
import type { Executor } from '../database.js';
import type { JobsTable } from '../tables/index.js';

export interface NewJob {
  kind: string;
  payload: unknown;
  /** Default: now. */
  runAt?: number;
  /** Attempts before the job is marked failed (default 10). */
  maxAttempts?: number;
}

/**
 * Adds jobs inside the caller's transaction (the transactional outbox): they exist exactly when
 * the state change that asked for them commits. Returns their ids. Waking workers is the
 * transaction owner's: after the commit in this process (JobSignals), and with
 * `notifyOtherProcesses` inside the transaction for other processes.
 */
export async function enqueueJobs(db: Executor, jobs: NewJob[], options: { now?: number } = {}): Promise<string[]> {
  if (jobs.length === 0) return [];
  const now = options.now ?? Date.now();
  const rows: JobsTable[] = jobs.map((job) => ({
    id: newId('job', now),
    kind: job.kind,
    payload: JSON.stringify(job.payload ?? null),
    state: 'pending',
    run_at: job.runAt ?? now,
    attempts: 0,
    max_attempts: job.maxAttempts ?? 10,
    locked_by: null,
    locked_at: null,
    last_error: null,
    created_at: now,
    updated_at: now,
  }));
  await db.insertInto('jobs').values(rows).execute();
  return rows.map((row) => row.id);
}
