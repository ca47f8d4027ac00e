import type pg from 'pg';
import type { Liveness } from '../liveness.js';
import type { Logger } from '../logger.js';
import type { QueueMetrics } from '../metrics.js';
import type { Db } from '../storage/database.js';
import type { Tracing } from '../tracing.js';
import { lightTransaction } from '../storage/light-transaction.js';
import { claimDueJobs, failHeldJob, type ClaimedJob, type JobSignals } from '../storage/queue/index.js';
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
  /** Traces (docs/deployment.md, "Traces"): a span per request of each batch; undefined while off. */
  tracing?: Tracing | undefined;
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
 * Records a failed attempt of a claimed job under its lease; after its last one the handler's
 * onExhausted runs in the same transaction. While the database cannot serve, it is written again
 * as long as the lease holds (whileLeaseHolds).
 */
export async function recordFailure(context: WorkerContext, job: ClaimedJob, error: unknown): Promise<void> {
  const record = () =>
    context.deps.db.transaction().execute(async (tx) => {
      const state = await failHeldJob(tx, job, error, { now: Date.now() });
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

/** Claims up to `limit` due jobs of `kinds` under a written lease (the jobs of a failed batch), and counts the claim. */
export async function claimJobs(context: WorkerContext, kinds: readonly string[], limit: number): Promise<ClaimedJob[]> {
  const claim = { workerId: context.workerId, kinds, limit, leaseMs: context.leaseMs, now: Date.now() };
  const jobs = await lightTransaction(context.deps.db, (tx) => claimDueJobs(tx, claim), { singleStatement: true });
  context.metrics.claims.inc({ loop: 'transactional' });
  context.metrics.claimedJobs.inc({ loop: 'transactional' }, jobs.length);
  return jobs;
}
