import type pg from 'pg';
import type { Liveness } from '../liveness.js';
import type { Logger } from '../logger.js';
import type { QueueMetrics } from '../metrics.js';
import type { Db } from '../storage/database.js';
import { lightTransaction } from '../storage/light-transaction.js';
import { claimDueJobs, JOBS_TABLE_QUEUE, type ClaimedJob, type JobSignals, type StandaloneQueue } from '../storage/queue/index.js';
import type { JobContext, JobHandlers } from './job-handlers.js';
import { whileLeaseHolds } from './while-lease-holds.js';

export interface JobWorkerDeps {
  db: Db;
  log: Logger;
  clock: () => number;
  /** Woken in this process after commits that enqueued jobs. */
  signals: JobSignals;
  /** PostgreSQL pool: the worker LISTENs for jobs enqueued by other processes. */
  pool?: pg.Pool | undefined;
  /** Claims, wake-ups and lease renewals, for /metrics (default: counted where nobody reads them). */
  metrics?: QueueMetrics;
  /** Told of a statement or transaction that failed (readiness keeps those meaning the database cannot serve). */
  onDatabaseFailure?: (error: unknown) => void;
  /** /health/live: each loop's step is watched (src/liveness.ts). */
  liveness?: Pick<Liveness, 'watch'>;
}

/** What the worker's loops share. */
export interface WorkerContext {
  deps: JobWorkerDeps;
  handlers: JobHandlers;
  workerId: string;
  leaseMs: number;
  log: Logger;
  metrics: QueueMetrics;
  /** Given to handlers. */
  job: JobContext;
}

/**
 * Records a failed run under the job's lease, in `queue` (where the job lives); after its last
 * one the handler's onExhausted runs in the same transaction. While the database cannot serve, it
 * is written again as long as the lease holds (whileLeaseHolds).
 */
export async function recordFailure(context: WorkerContext, job: ClaimedJob, error: unknown, queue: StandaloneQueue = JOBS_TABLE_QUEUE): Promise<void> {
  const record = () =>
    context.deps.db.transaction().execute(async (tx) => {
      const state = await queue.fail(tx, job, error, Date.now());
      if (state === 'lost') {
        context.metrics.leasesLost.inc();
        return context.log.warn({ jobId: job.id }, 'lease lost before the failure was recorded');
      }
      if (state === 'failed') await context.handlers[job.kind]?.onExhausted?.(tx, job, error, context.job);
      context.log.warn({ err: error, jobId: job.id, kind: job.kind, attempt: job.attempts, state }, 'job attempt failed');
    });
  try {
    await whileLeaseHolds(job, record, (failure) => context.deps.onDatabaseFailure?.(failure));
  } catch (failure) {
    context.deps.onDatabaseFailure?.(failure);
    context.log.error({ err: failure, jobId: job.id }, 'could not record a job failure; its lease will expire');
  }
}

/**
 * Claims up to `limit` due jobs of `kinds` for one of the loops, leaving out those of
 * `excludeGroups` and the ids of `excludeIds` (due at `now`), and counts the claim. A lease lost
 * in a power failure only lets the job run again: the claim does not wait for the disk.
 */
export async function claimJobs(
  context: WorkerContext,
  loop: 'transactional' | 'delivery',
  kinds: readonly string[],
  limit: number,
  options: { excludeGroups?: readonly string[]; excludeIds?: readonly string[]; now?: number; queue?: StandaloneQueue } = {},
): Promise<ClaimedJob[]> {
  const { deps } = context;
  const claim = {
    workerId: context.workerId,
    kinds,
    limit,
    leaseMs: context.leaseMs,
    now: options.now ?? Date.now(),
    excludeGroups: options.excludeGroups ?? [],
    excludeIds: options.excludeIds ?? [],
  };
  const queue = options.queue;
  const jobs = await lightTransaction(deps.db, (tx) => (queue ? queue.claim(tx, claim) : claimDueJobs(tx, claim)), { singleStatement: true });
  context.metrics.claims.inc({ loop });
  context.metrics.claimedJobs.inc({ loop }, jobs.length);
  return jobs;
}
