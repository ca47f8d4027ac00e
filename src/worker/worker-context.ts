import type pg from 'pg';
import type { Logger } from '../logger.js';
import type { QueueMetrics } from '../metrics.js';
import type { Db } from '../storage/database.js';
import { lightTransaction } from '../storage/light-transaction.js';
import { claimDueJobs, failHeldJob, type ClaimedJob, type JobSignals } from '../storage/queue/index.js';
import type { JobContext, JobHandlers } from './job-handlers.js';

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

/** Records a failed attempt under the job's lease; after its last one the handler's onExhausted runs in the same transaction. */
export async function recordFailure(context: WorkerContext, job: ClaimedJob, error: unknown): Promise<void> {
  try {
    await context.deps.db.transaction().execute(async (tx) => {
      const state = await failHeldJob(tx, job, error);
      if (state === 'lost') {
        context.metrics.leasesLost.inc();
        return context.log.warn({ jobId: job.id }, 'lease lost before the failure was recorded');
      }
      if (state === 'failed') await context.handlers[job.kind]?.onExhausted?.(tx, job, error, context.job);
      context.log.warn({ err: error, jobId: job.id, kind: job.kind, attempt: job.attempts, state }, 'job attempt failed');
    });
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
  options: { excludeGroups?: readonly string[]; excludeIds?: readonly string[]; now?: number } = {},
): Promise<ClaimedJob[]> {
  const { deps } = context;
  const claim = { workerId: context.workerId, kinds, limit, leaseMs: context.leaseMs, now: options.now ?? Date.now(), excludeGroups: options.excludeGroups ?? [], excludeIds: options.excludeIds ?? [] };
  const jobs = await lightTransaction(deps.db, (tx) => claimDueJobs(tx, claim), { singleStatement: true });
  context.metrics.claims.inc({ loop });
  context.metrics.claimedJobs.inc({ loop }, jobs.length);
  return jobs;
}
