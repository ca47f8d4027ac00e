import { newId } from '../../domain/ids.js';
import type { Executor } from '../database.js';
import type { JobsTable } from '../tables/index.js';
import { toClaimedJob, type ClaimedJob, type Lease } from './job.js';

export interface NewJob {
  kind: string;
  payload: unknown;
  /** Default: now. */
  runAt?: number;
  /** Attempts before the job is marked failed (default 10). */
  maxAttempts?: number;
  /** A second job with the same key is silently not enqueued. */
  dedupeKey?: string;
  /** Whose job it is (a delivery's account): claims share a worker's slots fairly between groups. */
  groupKey?: string;
}

/**
 * A worker's offer to run, right after the enqueueing transaction commits, the jobs of `kinds` it
 * enqueues due now: as many as `room`, inserted already leased to it (what a claim would write),
 * so they need no claim. It records what it took and how many it had to leave to a claim.
 */
export interface LeaseOffer {
  readonly kinds: ReadonlySet<string>;
  readonly lease: Lease;
  room: number;
  /** Groups holding their share of the worker's slots: their jobs are left to a fair claim. */
  readonly excludedGroups: ReadonlySet<string>;
  /** Jobs inserted leased to the worker, in enqueue order: it starts them after the commit. */
  readonly taken: ClaimedJob[];
  /** Jobs of these kinds, due now, inserted without a lease (no room left): someone must claim them. */
  declined: number;
}

export function leaseOffer(kinds: ReadonlySet<string>, lease: Lease, room: number, excludedGroups: ReadonlySet<string> = new Set()): LeaseOffer {
  return { kinds, lease, room, excludedGroups, taken: [], declined: 0 };
}

export interface EnqueueOptions {
  now?: number;
  /** Insert the due jobs of the offered kinds leased to this worker, as far as it has room. */
  leaseTo?: LeaseOffer;
}

/**
 * Adds jobs inside the caller's transaction (the transactional outbox): they exist exactly when
 * the state change that asked for them commits. Returns the ids of the rows inserted (dedupe hits
 * are left out). Waking workers is the transaction owner's: after the commit in this process
 * (JobSignals), and with `notifyOtherProcesses` inside the transaction for other processes.
 */
export async function enqueueJobs(db: Executor, jobs: NewJob[], options: EnqueueOptions = {}): Promise<string[]> {
  if (jobs.length === 0) return [];
  const now = options.now ?? Date.now();
  const offer = options.leaseTo;
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
      group_key: job.groupKey ?? null,
      created_at: now,
      updated_at: now,
    };
    if (offer?.kinds.has(job.kind) && runAt <= now) {
      if (offer.room > 0 && !(job.groupKey !== undefined && offer.excludedGroups.has(job.groupKey))) {
        offer.room -= 1;
        Object.assign(row, { locked_by: offer.lease.token, locked_at: now, run_at: offer.lease.until, attempts: 1 });
      } else {
        offer.declined += 1;
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
  if (offer) {
    const insertedIds = new Set(ids);
    for (const row of rows) {
      if (row.locked_by === null) continue;
      // A dedupe hit was not inserted: the job already there is someone else's to run.
      if (insertedIds.has(row.id)) offer.taken.push(toClaimedJob(row));
      else offer.room += 1;
    }
  }
  return ids;
}
