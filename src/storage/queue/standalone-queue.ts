import type { Executor } from '../database.js';
import { claimDueJobs } from './claim-due-jobs.js';
import { completeHeldJobs } from './complete-held-jobs.js';
import { claimDueDeliveries, endHeldDeliveries, failDeliveryRun, renewDeliveryLeases } from './delivery-rows.js';
import { extendHeldLeases } from './extend-held-leases.js';
import { failHeldJob } from './fail-held-job.js';
import type { ClaimedJob } from './job.js';

/** What a claim for a standalone loop asks for. */
interface StandaloneClaim {
  workerId: string;
  kinds: readonly string[];
  limit: number;
  leaseMs: number;
  now: number;
  /** Groups holding their share of the worker's slots. */
  excludeGroups?: readonly string[];
  /** The claimer's own runs whose lease may have ended (worker/delivery-ownership.ts). */
  excludeIds?: readonly string[];
}

/**
 * Where the jobs of a standalone loop live, and the four things the loop does with them, each
 * under the job's lease: claim, end (done, nothing to record: the handler settled its outcome, or
 * found nothing to do), fail a run (retried later, or exhausted), renew. Two tables serve it:
 * `jobs` (any kind) and the notification rows (deliveries, delivery-rows.ts). The hand-off of a
 * batch is the other way in (a `LeaseOffer` the inserting code applies).
 */
export interface StandaloneQueue {
  readonly name: string;
  claim(db: Executor, claim: StandaloneClaim): Promise<ClaimedJob[]>;
  end(db: Executor, jobs: readonly ClaimedJob[]): Promise<Set<string>>;
  fail(db: Executor, job: ClaimedJob, error: unknown, now: number): Promise<'retrying' | 'failed' | 'lost'>;
  renew(db: Executor, jobs: readonly ClaimedJob[], until: number, now: number): Promise<number>;
}

export const JOBS_TABLE_QUEUE: StandaloneQueue = {
  name: 'jobs',
  claim: (db, claim) => claimDueJobs(db, claim),
  end: (db, jobs) => completeHeldJobs(db, jobs),
  fail: (db, job, error, now) => failHeldJob(db, job, error, { now }),
  renew: (db, jobs, until, now) => extendHeldLeases(db, jobs, until, now),
};

/** Runs of a delivery that ended without an outcome before it fails (the job's `maxAttempts`). */
export const DELIVERY_RUNS_WITHOUT_OUTCOME = 20;

export const DELIVERY_ROWS_QUEUE: StandaloneQueue = {
  name: 'notifications',
  claim: (db, claim) => claimDueDeliveries(db, { ...claim, maxRuns: DELIVERY_RUNS_WITHOUT_OUTCOME }),
  end: (db, jobs) => endHeldDeliveries(db, jobs),
  fail: (db, job, _error, now) => failDeliveryRun(db, job, { now }),
  renew: (db, jobs, until) => renewDeliveryLeases(db, jobs, until),
};
