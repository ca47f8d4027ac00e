import { randomBytes } from 'node:crypto';
import { createQueueMetrics } from '../metrics.js';
import { DELIVERIES } from '../storage/deliveries.js';
import { dialectOf } from '../storage/dialect.js';
import { listenForJobs } from '../storage/queue/index.js';
import { createDeliveryLoop, type Deliverer } from './delivery-loop.js';
import type { JobContext, JobHandlers } from './job-handlers.js';
import { createTransactionalBatch } from './transactional-loop.js';
import { Wakeup } from './wakeup.js';
import { runLoop } from './worker-loop.js';
import type { JobWorkerDeps, WorkerContext } from './worker-context.js';

export type { JobWorkerDeps } from './worker-context.js';

export interface JobWorkerOptions {
  /** The transactional job kinds (the jobs table). */
  handlers: JobHandlers;
  /** Runs the deliveries (the notification rows); null: this worker delivers nothing. */
  deliverer: Deliverer | null;
  /** How long a claimed job stays reserved for this worker (JOB_LEASE). */
  leaseMs: number;
  /**
   * Transactional jobs taken and committed together (default: 256 on SQLite, 512 on PostgreSQL).
   * One SQLite commit is an fsync, so batching 256 jobs per commit is what lets the worker keep up
   * with ingest; a bigger SQLite batch only holds the one writer longer. A PostgreSQL batch is ~10
   * round trips whatever its size, each waiting its turn on an event loop busy with ingest: at 256
   * both loops ran full batches back to back and fell behind ingest; at 512 their batches are no
   * longer full and the worker keeps up (`npm run bench -- --only ingest`; docs/benchmarks.md).
   */
  batchSize?: number;
  /**
   * Deliveries held before or in their call (default 512; an account alone holds half of it);
   * as many again may be past it, recording their outcome. The calls themselves are bounded by
   * the outbound limits (64 overall, 8 per account and address): the rest wait there, so a
   * claim's deliveries keep the connections busy while this thread commits. With 64 the
   * connections sat idle between claims and delivery throughput fell (`npm run bench -- --only delivery`).
   */
  deliveryCapacity?: number;
  /** Polling interval: the safety net behind the wake-ups. */
  pollIntervalMs?: number;
  /** Pause after a part-full transactional batch so the next one gathers more jobs (default 10 ms). */
  gatherMs?: number;
  /**
   * Transactional batches in flight at once (default: 2 on PostgreSQL, 1 on SQLite). A PostgreSQL
   * batch spends most of its time waiting for ~20 round trips; a second one (SKIP LOCKED keeps
   * their jobs apart) uses that wait. SQLite has one writer and one connection: always 1.
   */
  transactionalLoops?: number;
  /** false: no background loops; call runUntilIdle() (tests). */
  autoStart?: boolean;
  workerId?: string;
}

export interface JobWorker {
  readonly workerId: string;
  /** Processes due jobs until none is left; returns how many were taken or claimed. */
  runUntilIdle(): Promise<number>;
  /** Graceful: finishes the batches and the deliveries in flight, claims nothing more. */
  stop(): Promise<void>;
}

/**
 * The job worker: the transactional loops (request registration and processing, in batches, one
 * transaction each: transactional-loop.ts) and the delivery loop (notification deliveries, one
 * HTTP call each: delivery-loop.ts), woken by three sources — JobSignals after a commit in this
 * process, LISTEN on PostgreSQL for other processes, and the poll — each loop a worker-loop.ts
 * state machine.
 */
export function startJobWorker(deps: JobWorkerDeps, options: JobWorkerOptions): JobWorker {
  const workerId = options.workerId ?? `w-${randomBytes(6).toString('hex')}`;
  const log = deps.log.child({ component: 'job-worker', workerId });
  const metrics = deps.metrics ?? createQueueMetrics();
  const job: JobContext = { db: deps.db, log, clock: deps.clock, workerId };
  const dialect = dialectOf(deps.db);
  const context: WorkerContext = { deps, handlers: options.handlers, workerId, leaseMs: options.leaseMs, log, metrics, job };
  const transactionalKinds = Object.keys(options.handlers);
  const batchSize = options.batchSize ?? dialect.jobBatchSize;
  const pollMs = options.pollIntervalMs ?? 1000;
  let stopping = false;

  const deliveries = options.deliverer
    ? createDeliveryLoop({ db: deps.db, log, metrics, workerId, leaseMs: options.leaseMs, deliverer: options.deliverer, ...(options.deliveryCapacity ? { capacity: options.deliveryCapacity } : {}) })
    : undefined;
  const runBatch = createTransactionalBatch(context, { kinds: transactionalKinds, batchSize, deliveries });
  const batchWakes = Array.from({ length: dialect.concurrentWriters ? Math.max(1, options.transactionalLoops ?? 2) : 1 }, () => new Wakeup());

  /** The wake-up bus: `kinds` lets the loops that run none of them sleep on. */
  const wake = (kinds?: readonly string[]) => {
    if (!kinds || kinds.some((kind) => transactionalKinds.includes(kind))) for (const w of batchWakes) w.signal();
    if (deliveries && (!kinds || kinds.includes(DELIVERIES))) deliveries.woken();
  };
  const unsubscribe = deps.signals.onEnqueued((kinds) => {
    metrics.wakeups.inc({ source: 'local' });
    wake(kinds);
  });
  const stopListening =
    deps.pool && options.autoStart !== false
      ? listenForJobs(
          deps.pool,
          (kinds) => {
            metrics.wakeups.inc({ source: 'notify' });
            wake(kinds);
          },
          (error) => log.warn({ err: error }, 'LISTEN connection failed; polling meanwhile'),
        )
      : undefined;

  const loop = { pollMs, stopping: () => stopping, log, metrics, onError: deps.onDatabaseFailure };
  const watch = (label: string) => (busySince: () => number | undefined) => deps.liveness?.watch(`worker ${workerId}: the ${label} loop`, busySince) ?? (() => {});
  const loops =
    options.autoStart === false
      ? []
      : [
          ...(transactionalKinds.length === 0
            ? []
            : batchWakes.map((w, i) => runLoop({ ...loop, name: 'transactional', step: runBatch, wake: w, batchSize, gatherMs: options.gatherMs ?? 10, watch: watch(`transactional (${i + 1})`) }))),
          ...(!deliveries ? [] : [runLoop({ ...loop, name: 'delivery', step: () => deliveries.step(), wake: deliveries.wake, batchSize, gatherMs: 0, watch: watch('delivery') })]),
        ];

  return {
    workerId,
    async runUntilIdle() {
      let total = 0;
      for (;;) {
        const claimed = (transactionalKinds.length ? await runBatch() : 0) + ((await deliveries?.step()) ?? 0);
        await deliveries?.drain();
        total += claimed;
        if (claimed === 0) return total;
      }
    },
    async stop() {
      stopping = true;
      deliveries?.stop();
      wake();
      unsubscribe();
      await Promise.all(loops);
      await deliveries?.drain();
      await stopListening?.();
    },
  };
}
