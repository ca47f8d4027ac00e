import { randomBytes } from 'node:crypto';
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
}

/**
 * A job this worker holds, in one of two ways, both said by `lease`:
 * - a lease token written in the row by a claim (`claimDueJobs`), unique to that claim: only its
 *   holder can complete or fail it, until `leaseUntil`;
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

/** A lease token unique to one claim (or one hand-off of deliveries) of this worker: its id and 72 random bits. */
export function newLease(workerId: string): string {
  return `${workerId}:${randomBytes(9).toString('base64url')}`;
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
