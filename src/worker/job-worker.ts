import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import type { Logger } from '../logger.js';
import { createQueueMetrics, type QueueMetrics } from '../metrics.js';
import type { Db, Dialect, Tx } from '../storage/database.js';
import {
  claimDueJobs,
  completeJob,
  completeLockedJobs,
  extendJobLeases,
  completeJobs,
  failJob,
  LeaseLostError,
  listenForJobs,
  lockClaimedJobs,
  lockDueJobs,
  newLease,
  offerToTakeJobs,
  onJobsEnqueued,
  type ClaimedJob,
  type HandOff,
} from '../storage/queue/index.js';
import { lightTransaction } from '../storage/light-transaction.js';
import type { JobContext, JobHandlers, StandaloneJobHandler, TransactionalJobHandler } from './job-handlers.js';

export interface JobWorkerDeps {
  db: Db;
  dialect: Dialect;
  log: Logger;
  clock: () => number;
  /** PostgreSQL pool: the worker LISTENs for jobs enqueued by other processes. */
  pool?: pg.Pool | undefined;
  /** Claims, wake-ups and lease renewals, for /metrics (default: counted where nobody reads them). */
  metrics?: QueueMetrics;
}

export interface JobWorkerOptions {
  handlers: JobHandlers;
  /** How long a claimed job stays reserved for this worker (JOB_LEASE). */
  leaseMs: number;
  /**
   * Transactional jobs claimed and committed together. One SQLite commit (fsync) costs ~0.5 ms
   * here, so batching 256 jobs per commit is what lets the worker keep up with ingest.
   */
  batchSize?: number;
  /**
   * Standalone jobs before or in their external call (default 256); as many again may be past it,
   * recording their outcome. The calls themselves are bounded by the outbound limits (64 overall,
   * 8 per host): the rest wait there, so a claim's jobs keep the connections busy while this
   * thread commits. With 64 the connections sat idle between claims (~10,500 deliveries/s here
   * against ~14,500 with 256).
   */
  concurrency?: number;
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
  /** Processes due jobs until none is left; returns how many were claimed. */
  runUntilIdle(): Promise<number>;
  /** Graceful: finishes the batch and the standalone jobs in flight, claims nothing more. */
  stop(): Promise<void>;
}

/** A wake-up flag plus a waiter, so a signal arriving while busy is not lost. */
class Wakeup {
  private pending = false;
  private resolve: (() => void) | undefined;
  signal = (): void => {
    this.pending = true;
    this.resolve?.();
  };
  /** Resolves true when signalled, false when `ms` passed first. */
  wait(ms: number): Promise<boolean> {
    if (this.pending) {
      this.pending = false;
      return Promise.resolve(true);
    }
    return new Promise((resolve) => {
      const timer = setTimeout(() => done(false), ms);
      const self = this;
      function done(signalled: boolean) {
        clearTimeout(timer);
        self.resolve = undefined;
        self.pending = false;
        resolve(signalled);
      }
      this.resolve = () => done(true);
    });
  }
}

export function startJobWorker(deps: JobWorkerDeps, options: JobWorkerOptions): JobWorker {
  const workerId = options.workerId ?? `w-${randomBytes(6).toString('hex')}`;
  const batchSize = options.batchSize ?? 256;
  const concurrency = options.concurrency ?? 256;
  const pollIntervalMs = options.pollIntervalMs ?? 1000;
  const gatherMs = options.gatherMs ?? 10;
  const log = deps.log.child({ component: 'job-worker', workerId });
  const metrics = deps.metrics ?? createQueueMetrics();
  const ctx: JobContext = { db: deps.db, dialect: deps.dialect, log, clock: deps.clock, workerId };
  const kindsOf = (mode: 'transactional' | 'standalone') =>
    Object.entries(options.handlers)
      .filter(([, handler]) => handler.mode === mode)
      .map(([kind]) => kind);
  const transactionalKinds = kindsOf('transactional');
  const standaloneKinds = kindsOf('standalone');
  // A lease lost in a power failure only lets the job run again: no need to wait for the disk.
  const claim = async (loop: 'transactional' | 'delivery', kinds: string[], limit: number) => {
    const jobs = await lightTransaction(deps.db, (tx) => claimDueJobs(tx, { workerId, kinds, limit, leaseMs: options.leaseMs, now: Date.now() }), { singleStatement: true });
    metrics.claims.inc({ loop });
    metrics.claimedJobs.inc({ loop }, jobs.length);
    return jobs;
  };

  /** Records a failed attempt; after the last one the handler's onExhausted runs in the same transaction. */
  async function recordFailure(job: ClaimedJob, error: unknown): Promise<void> {
    try {
      await deps.db.transaction().execute(async (tx) => {
        const state = await failJob(tx, job, error);
        if (state === 'failed') await options.handlers[job.kind]?.onExhausted?.(tx, job, error, ctx);
        log.warn({ err: error, jobId: job.id, kind: job.kind, attempt: job.attempts, state }, 'job attempt failed');
      });
    } catch (failure) {
      if (failure instanceof LeaseLostError) {
        metrics.leasesLost.inc();
        return log.warn({ jobId: job.id }, 'lease lost before the failure was recorded');
      }
      log.error({ err: failure, jobId: job.id }, 'could not record a job failure; its lease will expire');
    }
  }

  async function handleInTransaction(tx: Tx, jobs: ClaimedJob[]): Promise<void> {
    const byKind = new Map<string, ClaimedJob[]>();
    for (const job of jobs) byKind.set(job.kind, [...(byKind.get(job.kind) ?? []), job]);
    for (const [kind, group] of byKind) await (options.handlers[kind] as TransactionalJobHandler).handle(tx, group, ctx);
  }

  /** One transaction for jobs leased earlier: lease check, the handlers' effects, completion. */
  async function runTransaction(jobs: ClaimedJob[]): Promise<void> {
    await deps.db.transaction().execute(async (tx) => {
      const held = await lockClaimedJobs(tx, jobs);
      await handleInTransaction(tx, held);
      await completeJobs(tx, held);
    });
  }

  /**
   * The fast path takes the due jobs INSIDE the batch transaction (lockDueJobs, no lease written):
   * taking, the handlers' effects and the completion commit together, so the row locks
   * (PostgreSQL) or the write lock (SQLite) are the lease, and a crash rolls everything back with
   * the jobs still pending. That is one commit per batch instead of two; each commit is an fsync
   * (~0.5–1.4 ms) that blocks the event loop on SQLite.
   * If the batch throws, nothing happened: its jobs are then claimed with committed leases and
   * run one by one, so a failing job is counted and retried on its own schedule.
   */
  async function runTransactionalBatch(): Promise<number> {
    let claimed = 0;
    let handOff: HandOff | undefined;
    let reserved = 0;
    const started = Date.now();
    try {
      await deps.db.transaction().execute(async (tx) => {
        handOff = offerStandalone(tx);
        reserved = handOff?.room ?? 0;
        offeredRoom += reserved;
        const jobs = await lockDueJobs(tx, { kinds: transactionalKinds, limit: batchSize, now: Date.now() });
        claimed = jobs.length;
        await handleInTransaction(tx, jobs);
        await completeLockedJobs(tx, jobs);
      }).finally(() => {
        offeredRoom -= reserved;
      });
      if (claimed > 0) {
        log.debug({ jobs: claimed, ms: Date.now() - started, handedOver: handOff?.taken.length ?? 0 }, 'batch committed');
        // The standalone work the batch enqueued (notification deliveries): what this worker took
        // starts now, what it had no room for is left to the delivery loop's claims.
        for (const job of handOff?.taken ?? []) startStandalone(job);
        if (!handOff || handOff.declined > 0) wakeStandalone();
      }
      return claimed;
    } catch (batchError) {
      log.debug({ err: batchError, jobs: claimed }, 'batch failed; running its jobs one by one');
    }
    const jobs = await claim('transactional', transactionalKinds, Math.max(claimed, 1));
    for (const job of jobs) {
      await runTransaction([job]).catch((error) => recordFailure(job, error));
    }
    return jobs.length;
  }

  const inFlight = new Set<Promise<void>>();
  const runningJobs = new Map<string, ClaimedJob>();
  /**
   * Standalone jobs wait for slow receivers and for concurrency slots; renewing their leases while
   * this process lives means only a dead process's jobs are ever taken over, however short JOB_LEASE.
   * One renewal at a time: while the database is slow, renewals started on a timer would pile up
   * behind each other and take connections from the claims and commits.
   */
  let renewing = false;
  const heartbeat = setInterval(() => {
    if (runningJobs.size === 0) return;
    if (renewing) return metrics.leaseRenewals.inc({ outcome: 'skipped' });
    renewing = true;
    lightTransaction(deps.db, (tx) => extendJobLeases(tx, [...runningJobs.values()], Date.now() + options.leaseMs), { singleStatement: true })
      .then((renewed) => {
        metrics.leaseRenewals.inc({ outcome: 'ok' });
        metrics.renewedLeases.inc(renewed);
      })
      .catch((error) => {
        metrics.leaseRenewals.inc({ outcome: 'failed' });
        log.warn({ err: error }, 'could not renew job leases');
      })
      .finally(() => (renewing = false));
  }, Math.max(50, Math.floor(options.leaseMs / 3)));
  heartbeat.unref();

  /** Jobs whose external work (an HTTP call) is not over yet: what `concurrency` bounds. */
  let slotsUsed = 0;

  async function runStandalone(job: ClaimedJob): Promise<void> {
    runningJobs.set(job.id, job);
    slotsUsed += 1;
    let slotHeld = true;
    const externalWorkDone = () => {
      if (!slotHeld) return;
      slotHeld = false;
      slotsUsed -= 1;
      // A freed slot is worth a claim only while due jobs may be left (each claim is a write).
      if (!standaloneDrained) wakeForSlot();
    };
    try {
      const outcome = await (options.handlers[job.kind] as StandaloneJobHandler).handle(job, ctx, { externalWorkDone });
      // A handler that settled its job itself (complete or reschedule) has released the lease.
      if (outcome !== 'settled') {
        await completeJob(deps.db, job).catch((error) => {
          if (!(error instanceof LeaseLostError)) throw error;
          metrics.leasesLost.inc();
        });
      }
    } catch (error) {
      await recordFailure(job, error);
    } finally {
      runningJobs.delete(job.id);
      externalWorkDone();
    }
  }

  /**
   * Each claim is a commit (an fsync on SQLite). Claiming as soon as one slot frees up made it
   * one claim per delivery; waiting for a quarter of the slots (or an idle worker) makes it one
   * claim per many deliveries without letting the pipeline run dry. A slot frees when its call is
   * over, not when its outcome is committed: holding it through the group commit (5 ms of
   * gathering plus the commit, which blocks this thread on SQLite) let the calls run dry between
   * claims (measured: 0 of 8 connections busy in a fifth of the samples, ~10,000 deliveries/s).
   * Jobs whose outcome is still being recorded are bounded too: at most `concurrency` of them.
   */
  const claimWhenFree = Math.max(1, Math.floor(concurrency / 4));
  const freeSlots = () => Math.min(concurrency - slotsUsed, 2 * concurrency - inFlight.size);

  /** Slots promised to batches still running (with two batches in flight, both offer). */
  let offeredRoom = 0;
  const standaloneKindSet: ReadonlySet<string> = new Set(standaloneKinds);

  /**
   * Offers to take, in the batch transaction `tx`, the standalone jobs it enqueues that are due now
   * (handOff.ts): as many as there are free slots not promised to another batch. They start right
   * after the commit, without a claim; a registration's notification reaches the delivery call one
   * commit sooner.
   */
  function offerStandalone(tx: Tx): HandOff | undefined {
    const room = freeSlots() - offeredRoom;
    if (standaloneKinds.length === 0 || stopping || room <= 0) return undefined;
    return offerToTakeJobs(tx, { kinds: standaloneKindSet, lease: newLease(workerId), leaseUntil: Date.now() + options.leaseMs, room });
  }

  function startStandalone(job: ClaimedJob): void {
    const running = runStandalone(job).finally(() => {
      inFlight.delete(running);
      if (!standaloneDrained) wakeForSlot();
    });
    inFlight.add(running);
  }

  /** The last claim found fewer due jobs than it asked for; new ones arrive with a wake-up (or the poll). */
  let standaloneDrained = false;
  /** Wake-ups of the delivery loop so far (see startStandaloneJobs). */
  let standaloneWakes = 0;
  async function startStandaloneJobs(): Promise<number> {
    const free = freeSlots();
    if (standaloneKinds.length === 0 || free <= 0) return 0;
    if (free < claimWhenFree && slotsUsed > 0) return 0;
    const wakesBefore = standaloneWakes;
    const jobs = await claim('delivery', standaloneKinds, free);
    // A short claim means the queue was drained when the claim read it, unless new jobs were
    // announced meanwhile: a wake-up consumed while every slot is busy would otherwise leave the
    // freed slots silent until the next poll.
    standaloneDrained = jobs.length < free && standaloneWakes === wakesBefore;
    log.debug({ asked: free, got: jobs.length, slotsUsed, inFlight: inFlight.size, drained: standaloneDrained }, 'claimed');
    for (const job of jobs) startStandalone(job);
    return jobs.length;
  }

  let stopping = false;
  const transactionalWakes = Array.from({ length: deps.dialect === 'postgres' ? Math.max(1, options.transactionalLoops ?? 2) : 1 }, () => new Wakeup());
  const standaloneWake = new Wakeup();
  const wakeStandalone = () => {
    standaloneWakes += 1;
    standaloneDrained = false;
    standaloneWake.signal();
  };
  const wakeForSlot = () => {
    metrics.wakeups.inc({ source: 'slot' });
    standaloneWake.signal();
  };
  const wakeAll = (kinds?: readonly string[]) => {
    if (!kinds || kinds.some((kind) => transactionalKinds.includes(kind))) for (const wake of transactionalWakes) wake.signal();
    if (!kinds || kinds.some((kind) => standaloneKinds.includes(kind))) wakeStandalone();
  };

  async function loop(name: string, kinds: string[], step: () => Promise<number>, wake: Wakeup, gatherMs: number): Promise<void> {
    if (kinds.length === 0) return;
    while (!stopping) {
      let claimed = 0;
      try {
        claimed = await step();
      } catch (error) {
        log.error({ err: error, loop: name }, 'job loop step failed');
      }
      if (claimed === 0 && !stopping) {
        if (!(await wake.wait(pollIntervalMs))) metrics.wakeups.inc({ source: 'poll' });
      }
      // A part-full batch means jobs trickle in: wait a moment so the next batch is bigger. Waking
      // on every ingest commit gave batches of a few jobs, each paying a commit and ~8 round trips
      // behind the busy HTTP side: 52 requests/s processed on PostgreSQL while ingesting 875/s.
      // Between full batches, setImmediate lets the HTTP side run (shared event loop and, on
      // SQLite, one shared connection).
      else if (claimed < batchSize && gatherMs > 0) await new Promise((resolve) => setTimeout(resolve, gatherMs));
      else await new Promise((resolve) => setImmediate(resolve));
    }
  }

  const unsubscribe = onJobsEnqueued(deps.db, (kinds) => {
    metrics.wakeups.inc({ source: 'local' });
    wakeAll(kinds);
  });
  const stopListening =
    deps.dialect === 'postgres' && deps.pool && options.autoStart !== false
      ? listenForJobs(
          deps.pool,
          () => {
            metrics.wakeups.inc({ source: 'notify' });
            wakeAll();
          },
          (error) => log.warn({ err: error }, 'LISTEN connection failed; polling meanwhile'),
        )
      : undefined;
  const loops =
    options.autoStart === false
      ? []
      : [
          ...transactionalWakes.map((wake) => loop('transactional', transactionalKinds, runTransactionalBatch, wake, gatherMs)),
          loop('standalone', standaloneKinds, startStandaloneJobs, standaloneWake, 0),
        ];

  return {
    workerId,
    async runUntilIdle() {
      let total = 0;
      for (;;) {
        const claimed = (transactionalKinds.length ? await runTransactionalBatch() : 0) + (await startStandaloneJobs());
        await Promise.all(inFlight);
        total += claimed;
        if (claimed === 0) return total;
      }
    },
    async stop() {
      stopping = true;
      wakeAll();
      unsubscribe();
      await Promise.all(loops);
      await Promise.all(inFlight);
      clearInterval(heartbeat);
      await stopListening?.();
    },
  };
}
