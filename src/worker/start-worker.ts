import type { Deps } from '../deps.js';
import { STATS_RETENTION_MS } from '../domain/notifications/endpoint-health.js';
import { deleteExpiredIdempotencyKeys } from '../storage/repositories/idempotency-keys.js';
import { deleteStatsBefore } from '../storage/repositories/subscription-health.js';
import { deleteOldNotifications } from '../services/notification-retention.js';
import { startJobWorker, type JobWorker, type JobWorkerOptions } from './job-worker.js';
import { buildJobHandlers, type BuildHandlersOptions } from './registry.js';

export type WorkerOverrides = Partial<JobWorkerOptions> & BuildHandlersOptions;

/** The job worker with every registered handler (request jobs, and whatever JOB_HANDLERS adds). */
export function startWorker(deps: Deps, overrides: WorkerOverrides = {}): JobWorker {
  const { recordOutcome, ...options } = overrides;
  return startJobWorker(
    {
      db: deps.db,
      log: deps.log,
      clock: deps.clock,
      signals: deps.signals,
      pool: deps.storage.pool,
      metrics: deps.metrics.queue,
      onDatabaseFailure: (error) => deps.readiness.noteFailure(error),
    },
    { handlers: buildJobHandlers(deps, { recordOutcome }), leaseMs: deps.config.jobLeaseMs, ...options },
  );
}

const PURGE_INTERVAL_MS = 10 * 60_000;

/**
 * Deletes what has outlived its use: expired Idempotency-Keys, endpoint-health buckets older than
 * the longest stats window, and ended notifications older than NOTIFICATION_RETENTION.
 */
export async function purgeExpired(deps: Deps): Promise<void> {
  const now = deps.clock();
  await deleteExpiredIdempotencyKeys(deps.db, now).catch((error) => deps.log.warn({ err: error }, 'idempotency key purge failed'));
  await deleteStatsBefore(deps.db, now - STATS_RETENTION_MS).catch((error) => deps.log.warn({ err: error }, 'endpoint health purge failed'));
  await deleteOldNotifications(deps.db, deps.config.notificationRetentionMs, now)
    .then((deleted) => deleted > 0 && deps.log.info({ deleted }, 'notifications past NOTIFICATION_RETENTION deleted'))
    .catch((error) => deps.log.warn({ err: error }, 'notification retention purge failed'));
}

/** BACKGROUND_TASKS entry: the job worker plus, every ten minutes, purgeExpired. */
export async function startJobWorkerTask(deps: Deps): Promise<{ stop(): Promise<void> }> {
  const worker = startWorker(deps);
  const purge = setInterval(() => void purgeExpired(deps), PURGE_INTERVAL_MS);
  purge.unref();
  deps.log.info({ workerId: worker.workerId }, 'job worker started');
  return {
    async stop() {
      clearInterval(purge);
      await worker.stop();
    },
  };
}
