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
 * A job under lease. `lease` is unique per claim, so only the claimer of this very attempt can
 * complete, fail or release it: a worker whose lease expired and was re-claimed gets LeaseLostError.
 */
export interface ClaimedJob<Payload = unknown> extends Job<Payload> {
  lease: string;
  /** When the lease ends and the job becomes due again for any worker. */
  leaseUntil: number;
}

export class LeaseLostError extends Error {
  constructor(jobId: string) {
    super(`job ${jobId} is no longer leased by this worker`);
    this.name = 'LeaseLostError';
  }
}

export function toClaimedJob(row: JobsTable): ClaimedJob {
  return {
    id: row.id,
    kind: row.kind,
    payload: JSON.parse(row.payload) as unknown,
    runAt: row.run_at,
    attempts: row.attempts,
    maxAttempts: row.max_attempts,
    lastError: row.last_error,
    createdAt: row.created_at,
    lease: row.locked_by!,
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
