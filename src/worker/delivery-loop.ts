import { lightTransaction } from '../storage/light-transaction.js';
import { completeHeldJobs, extendHeldLeases, leaseOffer, newLease, type ClaimedJob, type LeaseOffer } from '../storage/queue/index.js';
import type { StandaloneJobHandler } from './job-handlers.js';
import { Wakeup } from './wakeup.js';
import { claimJobs, recordFailure, type WorkerContext } from './worker-context.js';

/**
 * The loop of the standalone jobs (notification deliveries: an HTTP call cannot sit in a
 * transaction). Each job holds a delivery **slot** while it waits for or makes its call; up to
 * `concurrency` slots, and as many jobs again may be past their call, recording its outcome.
 *
 * - **Claiming.** Each claim is a write (and a commit: an fsync on SQLite). Claiming as soon as one
 *   slot frees up made it one claim per delivery; waiting for a quarter of the slots (or an idle
 *   loop) makes it one claim per many deliveries without letting the calls run dry. A slot frees
 *   when its call is over, not when its outcome is committed: held through the group commit (5 ms
 *   of gathering plus the commit, which blocks the thread on SQLite), the connections sat idle
 *   between claims (0 of 8 busy in a fifth of the samples, ~10,000 deliveries/s).
 * - **Drained.** A claim that got fewer jobs than it asked for read an empty queue, unless a
 *   wake-up came meanwhile: then freed slots no longer wake the loop (each claim is a write) and
 *   new work arrives with a wake-up, or the poll.
 * - **Offers.** A transactional batch of this worker may take, in its own transaction, the jobs it
 *   enqueues for this loop (`offer`): up to the free slots not promised to another batch in
 *   flight. They start right after its commit (`adopt`), without a claim.
 * - **Leases.** Renewed every JOB_LEASE/3 while the jobs run (`heartbeat`), one renewal at a time,
 *   so that, while renewals keep up, only a dead process's jobs are taken over. A renewal too late
 *   for a lease lets the next claim return a job this process is still running: it is not started
 *   again, its run carries on under the new lease (`startOnce`).
 */
export interface DeliveryLoop {
  readonly kinds: readonly string[];
  readonly wake: Wakeup;
  /** New jobs were announced: the queue is not drained any more. */
  woken(): void;
  /** Claims and starts due jobs as far as slots allow; returns how many. */
  step(): Promise<number>;
  /** An offer for a batch's transaction (room may be 0: it then only counts what it declined). */
  offer(): LeaseOffer | undefined;
  /** After the batch: start what it took if it committed, and give the promised room back. */
  adopt(offer: LeaseOffer | undefined, committed: boolean): void;
  /** Claims nothing more; jobs in flight go on (their leases still renewed). */
  stop(): void;
  /** Resolves when no job is in flight any more, then stops renewing leases. */
  drain(): Promise<void>;
}

export function createDeliveryLoop(context: WorkerContext, options: { kinds: string[]; concurrency: number }): DeliveryLoop {
  const { deps, leaseMs, metrics } = context;
  const { kinds, concurrency } = options;
  const kindSet: ReadonlySet<string> = new Set(kinds);
  const wake = new Wakeup();
  const inFlight = new Set<Promise<void>>();
  const running = new Map<string, ClaimedJob>();
  const claimWhenFree = Math.max(1, Math.floor(concurrency / 4));
  let slotsUsed = 0;
  let promisedRoom = 0;
  let drained = false;
  let wakes = 0;
  let stopping = false;
  let renewing = false;

  const freeSlots = () => Math.min(concurrency - slotsUsed, 2 * concurrency - inFlight.size);
  const wakeForSlot = () => {
    if (drained) return;
    metrics.wakeups.inc({ source: 'slot' });
    wake.signal();
  };

  async function run(job: ClaimedJob): Promise<void> {
    running.set(job.id, job);
    slotsUsed += 1;
    let slotHeld = true;
    const externalWorkDone = () => {
      if (!slotHeld) return;
      slotHeld = false;
      slotsUsed -= 1;
      wakeForSlot();
    };
    try {
      const outcome = await (context.handlers[job.kind] as StandaloneJobHandler).handle(job, context.job, { externalWorkDone });
      // A handler that settled its job itself (completed or rescheduled) has released the lease.
      if (outcome !== 'settled' && !(await completeHeldJobs(deps.db, [job])).has(job.id)) metrics.leasesLost.inc();
    } catch (error) {
      await recordFailure(context, job, error);
    } finally {
      running.delete(job.id);
      externalWorkDone();
    }
  }

  /**
   * Starts the jobs not already running here. A claim can return one that is: its lease ran out
   * while this process still ran it (a renewal came too late, or a batch's hand-off committed after
   * the lease it wrote had ended: a stalled event loop, a slow database), so the claim took it back
   * for this process. One run, not two: the run in flight goes on under the claim's lease, and its
   * outcome is recorded with it. (The claim still counted a run in the row's `attempts`.) Returns
   * how many started.
   */
  function startOnce(jobs: readonly ClaimedJob[]): number {
    let reclaimed = 0;
    for (const job of jobs) {
      const held = running.get(job.id);
      if (!held) {
        start(job);
        continue;
      }
      held.lease = job.lease;
      held.leaseUntil = job.leaseUntil;
      reclaimed += 1;
    }
    if (reclaimed > 0) context.log.warn({ reclaimed, leaseMs }, 'claimed jobs back whose lease ran out while this process ran them: JOB_LEASE is short for this load');
    return jobs.length - reclaimed;
  }

  function start(job: ClaimedJob): void {
    const promise = run(job).finally(() => {
      inFlight.delete(promise);
      wakeForSlot();
    });
    inFlight.add(promise);
  }

  const heartbeat = setInterval(() => {
    if (running.size === 0) return;
    if (renewing) return metrics.leaseRenewals.inc({ outcome: 'skipped' });
    renewing = true;
    lightTransaction(deps.db, (tx) => extendHeldLeases(tx, [...running.values()], Date.now() + leaseMs), { singleStatement: true })
      .then((renewed) => {
        metrics.leaseRenewals.inc({ outcome: 'ok' });
        metrics.renewedLeases.inc(renewed);
      })
      .catch((error) => {
        metrics.leaseRenewals.inc({ outcome: 'failed' });
        context.log.warn({ err: error }, 'could not renew job leases');
      })
      .finally(() => (renewing = false));
  }, Math.max(50, Math.floor(leaseMs / 3)));
  heartbeat.unref();

  return {
    kinds,
    wake,
    woken() {
      wakes += 1;
      drained = false;
      wake.signal();
    },
    async step() {
      const free = freeSlots();
      if (kinds.length === 0 || free <= 0 || stopping) return 0;
      if (free < claimWhenFree && slotsUsed > 0) return 0;
      const wakesBefore = wakes;
      const jobs = await claimJobs(context, 'delivery', kinds, free);
      drained = jobs.length < free && wakes === wakesBefore;
      context.log.debug({ asked: free, got: jobs.length, slotsUsed, inFlight: inFlight.size, drained }, 'claimed');
      return startOnce(jobs);
    },
    offer() {
      if (kinds.length === 0) return undefined;
      const room = stopping ? 0 : Math.max(0, freeSlots() - promisedRoom);
      promisedRoom += room;
      return leaseOffer(kindSet, { token: newLease(context.workerId), until: Date.now() + leaseMs }, room);
    },
    adopt(offer, committed) {
      if (!offer) return;
      promisedRoom -= offer.room + offer.taken.length;
      if (!committed) return;
      // A job a claim already took back (the hand-off's lease had ended by its commit) runs under
      // the claim's newer lease: not again.
      for (const job of offer.taken) if (!running.has(job.id)) start(job);
      if (offer.declined > 0) this.woken();
    },
    stop() {
      stopping = true;
    },
    async drain() {
      while (inFlight.size > 0) await Promise.all(inFlight);
      if (stopping) clearInterval(heartbeat);
    },
  };
}
