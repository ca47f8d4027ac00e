import { isPostgres } from '../migrations/types.js';
import { newId } from '../../domain/ids.js';
import type { Executor } from '../database.js';
import type { JobsTable } from '../tables/index.js';
import { handOffOf } from './handOff.js';
import { toClaimedJob } from './job.js';
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
 * If the transaction's worker offered to take jobs of these kinds (handOff.ts), the ones due now
 * are inserted already leased to it, as far as it has room.
 */
export async function enqueueJobs(db: Executor, jobs: NewJob[], options: EnqueueOptions = {}): Promise<string[]> {
  if (jobs.length === 0) return [];
  const now = options.now ?? Date.now();
  const handOff = handOffOf(db);
  const rows: JobsTable[] = jobs.map((job) => {
    const runAt = job.runAt ?? now;
    const row: JobsTable = {
      id: newId('job', now),
      kind: job.kind,
      payload: JSON.stringify(job.payload ?? null),
      state: 'pending',
      run_at: runAt,
      attempts: 0,
      max_attempts: job.maxAttempts ?? 10,
      locked_by: null,
      locked_at: null,
      last_error: null,
      dedupe_key: job.dedupeKey ?? null,
      created_at: now,
      updated_at: now,
    };
    if (handOff?.kinds.has(job.kind) && runAt <= now) {
      if (handOff.room > 0) {
        // What claimDueJobs would write.
        handOff.room -= 1;
        Object.assign(row, { locked_by: handOff.lease, locked_at: now, run_at: handOff.leaseUntil, attempts: 1 });
      } else {
        handOff.declined += 1;
      }
    }
    return row;
  });
  const inserted = await db
    .insertInto('jobs')
    .values(rows)
    .onConflict((oc) => oc.column('dedupe_key').doNothing())
    .returning('id')
    .execute();
  const ids = inserted.map((row) => row.id);
  if (handOff) {
    const insertedIds = new Set(ids);
    for (const row of rows) {
      if (row.locked_by === null) continue;
      // A dedupe hit was not inserted: the job already there is someone else's to run.
      if (insertedIds.has(row.id)) handOff.taken.push(toClaimedJob(row));
      else handOff.room += 1;
    }
  }
  // Jobs leased to this transaction's worker need no other worker woken.
  const othersHaveWork = rows.some((row) => row.locked_by === null);
  if (options.wakeOtherProcesses !== false && othersHaveWork && isPostgres(db as never)) await notifyOtherProcesses(db);
  return ids;
}

export async function enqueueJob(db: Executor, job: NewJob, options: EnqueueOptions = {}): Promise<string | undefined> {
  return (await enqueueJobs(db, [job], options))[0];
}
