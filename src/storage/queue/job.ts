import type { JobsTable } from '../tables/index.js';

/** A job as the worker sees it; `payload` is the parsed JSON. */
export interface Job<Payload = unknown> {
  id: string;
  kind: string;
  payload: Payload;
  runAt: number;
  attempts: number;
  maxAttempts: number;
  lastError: string | null;
  createdAt: number;
  /** Whose job it is, for fair claims (a delivery's account); null for the jobs of no one in particular. */
  groupKey: string | null;
}

/**
 * A job this worker holds, in one of two ways, both said by `lease`:
 * - a lease token written in the row (a claim, or a batch's hand-off with `leaseTo`), unique to
 *   that claim: only its holder can complete, fail or renew it, until `leaseUntil`;
 * - TRANSACTION_LEASE: the open transaction that took it (`takeDueJobs`) holds it, and nothing is
 *   written: it is completed in that transaction or not at all.
 */
export interface ClaimedJob<Payload = unknown> extends Job<Payload> {
  lease: string;
  /** When a written lease ends and the job is due again for any worker. */
  leaseUntil: number;
}

/** The `lease` of jobs held by the transaction that took them (`takeDueJobs`): no lease row is written. */
export const TRANSACTION_LEASE = '(this transaction)';

/** A lease to write: its token and its end. */
export interface Lease {
  token: string;
  until: number;
}

/** Thrown where a caller needs every job it held and one was taken over by another worker. */
export class LeaseLostError extends Error {
  constructor(jobIds: string) {
    super(`job ${jobIds} is no longer held by this worker`);
    this.name = 'LeaseLostError';
  }
}

export function toClaimedJob(row: JobsTable, lease = row.locked_by!): ClaimedJob {
  return {
    id: row.id,
    kind: row.kind,
    payload: JSON.parse(row.payload) as unknown,
    runAt: row.run_at,
    attempts: row.attempts,
    maxAttempts: row.max_attempts,
    lastError: row.last_error,
    createdAt: row.created_at,
    groupKey: row.group_key,
    lease,
    leaseUntil: row.run_at,
  };
}

/** Oldest first, as the jobs were enqueued (ids break ties). */
export function byCreation(a: Job, b: Job): number {
  return a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1);
}

/** Default retry schedule of a failed job: 1 s, 2 s, 4 s … capped at 10 minutes. Pure. */
export function retryDelayMs(attempts: number): number {
  return Math.min(1000 * 2 ** Math.max(0, attempts - 1), 10 * 60_000);
}
