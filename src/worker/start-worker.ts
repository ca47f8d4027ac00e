import type { Config } from '../config.js';
import type { Liveness } from '../liveness.js';
import type { Logger } from '../logger.js';
import type { Db, Storage } from '../storage/database.js';
import type { DatabaseReadiness } from '../services/database-readiness.js';
import { STATS_RETENTION_MS } from '../domain/notifications/endpoint-health.js';
import { deleteExpiredIdempotencyKeys } from '../storage/repositories/idempotency-keys.js';
import { deleteStatsBefore } from '../storage/repositories/subscription-health.js';
import { deleteOldNotifications } from '../services/notification-retention.js';
import { sweepEndedListenSessions } from '../services/listen-sessions.js';
import { ensureLogPartitions, logMaintenanceIntervalMs, logPeriodMs } from '../storage/log-partitions.js';
import { startJobWorker, type JobWorker, type JobWorkerOptions } from './job-worker.js';
import { notificationDeliverer } from './notifications/deliver-notification.js';
import { buildJobHandlers, type BuildHandlersOptions, type HandlerDeps } from './registry.js';

/** What the job worker, its handlers and its maintenance use; the composition root (deps.ts) builds it. */
export interface WorkerDeps extends HandlerDeps {
  config: HandlerDeps['config'] & MaintenanceDeps['config'] & Pick<Config, 'jobLeaseMs'>;
  /** PostgreSQL: the pool the worker LISTENs on for jobs enqueued by other processes. */
  storage: Pick<Storage, 'pool'>;
  /** Told of the database failures the worker meets (/health/ready). */
  readiness: Pick<DatabaseReadiness, 'noteFailure'>;
  /** /health/live watches the worker's loops. */
  liveness: Pick<Liveness, 'watch'>;
}

/** What the periodic maintenance (purgeExpired, ensureLogPeriods) uses. */
export interface MaintenanceDeps {
  db: Db;
  clock: () => number;
  log: Logger;
  config: Pick<Config, 'notificationRetentionMs'>;
}

export type WorkerOverrides = Partial<JobWorkerOptions> & BuildHandlersOptions;

/** The job worker with every registered handler (request jobs, and whatever JOB_HANDLERS adds) and the notifications' deliverer. */
export function startWorker(deps: WorkerDeps, overrides: WorkerOverrides = {}): JobWorker {
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
      liveness: deps.liveness,
      tracing: deps.tracing,
    },
    { handlers: buildJobHandlers(deps, { recordOutcome }), deliverer: notificationDeliverer(deps), leaseMs: deps.config.jobLeaseMs, ...options },
  );
}

/**
 * Deletes what has outlived its use: expired Idempotency-Keys, endpoint-health buckets older than
 * the longest stats window, ended listen sessions with the copies no CLI forwarded, and ended
 * notifications older than NOTIFICATION_RETENTION.
 */
export async function purgeExpired(deps: MaintenanceDeps): Promise<void> {
  const now = deps.clock();
  await deleteExpiredIdempotencyKeys(deps.db, now).catch((error) => deps.log.warn({ err: error }, 'idempotency key purge failed'));
  await deleteStatsBefore(deps.db, now - STATS_RETENTION_MS).catch((error) => deps.log.warn({ err: error }, 'endpoint health purge failed'));
  await sweepEndedListenSessions(deps.db, now).catch((error) => deps.log.warn({ err: error }, 'listen session sweep failed'));
  await deleteOldNotifications(deps.db, deps.config.notificationRetentionMs, now)
    .then(({ deleted, dropped, busy }) => {
      if (deleted > 0 || dropped.length > 0) deps.log.info({ deleted, dropped }, 'notifications past NOTIFICATION_RETENTION deleted');
      if (busy.length > 0) deps.log.warn({ partitions: busy }, 'delivery log partitions past NOTIFICATION_RETENTION left for the next purge: their locks were not granted in time');
    })
    .catch((error) => deps.log.warn({ err: error }, 'notification retention purge failed'));
}

/** Makes the delivery log's partitions of the coming periods (PostgreSQL; storage/log-partitions.ts). */
async function ensureLogPeriods(deps: MaintenanceDeps): Promise<void> {
  await ensureLogPartitions(deps.db, { now: deps.clock(), periodMs: logPeriodMs(deps.config.notificationRetentionMs) })
    .then((made) => made.length > 0 && deps.log.info({ partitions: made }, 'delivery log partitions made'))
    .catch((error) => deps.log.warn({ err: error }, 'making the delivery log partitions failed'));
}

/**
 * BACKGROUND_TASKS entry: the job worker plus its maintenance, twice per period of the delivery
 * log and at least every ten minutes: the coming periods' partitions, then purgeExpired.
 */
export async function startJobWorkerTask(deps: WorkerDeps): Promise<{ stop(): Promise<void> }> {
  const worker = startWorker(deps);
  const maintain = setInterval(() => void ensureLogPeriods(deps).then(() => purgeExpired(deps)), logMaintenanceIntervalMs(deps.config.notificationRetentionMs));
  maintain.unref();
  deps.log.info({ workerId: worker.workerId }, 'job worker started');
  return {
    async stop() {
      clearInterval(maintain);
      await worker.stop();
    },
  };
}
