import { isPostgres } from '../migrations/types.js';
import { newId } from '../../domain/ids.js';
import type { Executor } from '../database.js';
import type { JobsTable } from '../tables/index.js';
import { notifyOtherProcesses } from './wakeups.js';

export interface NewJob {
  kind: string;
  payload: unknown;
  /** Default: now. */
  runAt?: number;
  /** Attempts before the job is marked failed (default 10). */
  maxAttempts?: number;
  /** A second job with the same key is silently not enqueued. */
  dedupeKey?: string;
}

export interface EnqueueOptions {
  now?: number;
  /**
   * NOTIFY workers of other processes on commit (PostgreSQL). A worker enqueueing follow-up work
   * for itself turns it off: it claims again right after its batch anyway.
   */
  wakeOtherProcesses?: boolean;
}

/**
 * Adds jobs inside the caller's transaction (the transactional outbox): they exist exactly when
 * the state change that asked for them commits. After commit call `signalJobsEnqueued(db)` for
 * an in-process wake-up. Returns the ids of the rows inserted (dedupe hits are left out).
 */
export async function enqueueJobs(db: Executor, jobs: NewJob[], options: EnqueueOptions = {}): Promise<string[]> {
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
    dedupe_key: job.dedupeKey ?? null,
    created_at: now,
    updated_at: now,
  }));
  const inserted = await db
    .insertInto('jobs')
    .values(rows)
    .onConflict((oc) => oc.column('dedupe_key').doNothing())
    .returning('id')
    .execute();
  if (options.wakeOtherProcesses !== false && isPostgres(db as never)) await notifyOtherProcesses(db);
  return inserted.map((row) => row.id);
}

export async function enqueueJob(db: Executor, job: NewJob, options: EnqueueOptions = {}): Promise<string | undefined> {
  return (await enqueueJobs(db, [job], options))[0];
}
