import type { Deps } from '../deps.js';
import { deleteExpiredIdempotencyKeys } from '../storage/repositories/idempotency-keys.js';
import { startJobWorker, type JobWorker, type JobWorkerOptions } from './job-worker.js';
import { buildJobHandlers, type BuildHandlersOptions } from './registry.js';

export type WorkerOverrides = Partial<JobWorkerOptions> & BuildHandlersOptions;

/** The job worker with every registered handler (request jobs, and whatever JOB_HANDLERS adds). */
export function startWorker(deps: Deps, overrides: WorkerOverrides = {}): JobWorker {
  const { recordOutcome, ...options } = overrides;
  return startJobWorker(
    { db: deps.db, dialect: deps.dialect, log: deps.log, clock: deps.clock, signals: deps.signals, pool: deps.storage.pool, metrics: deps.metrics.queue },
    { handlers: buildJobHandlers(deps, { recordOutcome }), leaseMs: deps.config.jobLeaseMs, ...options },
  );
}

const IDEMPOTENCY_PURGE_INTERVAL_MS = 10 * 60_000;

/** BACKGROUND_TASKS entry: the job worker plus the hourly-ish purge of expired Idempotency-Keys. */
export async function startJobWorkerTask(deps: Deps): Promise<{ stop(): Promise<void> }> {
  const worker = startWorker(deps);
  const purge = setInterval(() => {
    deleteExpiredIdempotencyKeys(deps.db, deps.clock()).catch((error) => deps.log.warn({ err: error }, 'idempotency key purge failed'));
  }, IDEMPOTENCY_PURGE_INTERVAL_MS);
  purge.unref();
  deps.log.info({ workerId: worker.workerId }, 'job worker started');
  return {
    async stop() {
      clearInterval(purge);
      await worker.stop();
    },
  };
}
