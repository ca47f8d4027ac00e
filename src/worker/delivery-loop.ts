import { lightTransaction } from '../storage/light-transaction.js';
import { completeHeldJobs, extendHeldLeases, leaseOffer, newLease, type ClaimedJob, type LeaseOffer } from '../storage/queue/index.js';
import { AccountSlots, LIGHT_ACCOUNT_SLOTS } from './fair-share.js';
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
 *   flight. They start right after its commit (`adopt`), without a claim. Promised room is not
 *   free to claims either, or the adopted jobs would push the loop past its capacity.
 * - **Leases.** Renewed every JOB_LEASE/3 while the jobs run (`heartbeat`), one renewal at a time,
 *   so that, while renewals keep up, only a dead process's jobs are taken over. A renewal too late
 *   for a lease lets the next claim return a job this process is still running: it is not started
 *   again, its run carries on under the new lease (`startOnce`).
 * - **Fair between accounts** (fair-share.ts; docs/delivery.md, "Fair delivery"). Slots are
 *   counted per account (the job's group). A claim leaves out the accounts holding their share and
 *   takes theirs only when no one else's are due; an offer takes no job of an account over its
 *   share while other accounts hold slots. With every slot taken, a quarter as many again are kept
 *   for light accounts: claimed a few at a time, when new jobs were announced (or once a second,
 *   for jobs that came due by time), so that a delivery of an account with little in flight is
 *   never queued behind another account's calls, even calls that hang until their timeout.
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

/** How often, at most, a full loop claims for light accounts when no new job was announced (jobs that came due by time). */
const LIGHT_CLAIM_INTERVAL_MS = 1000;

export function createDeliveryLoop(context: WorkerContext, options: { kinds: string[]; concurrency: number }): DeliveryLoop {
  const { deps, leaseMs, metrics } = context;
  const { kinds, concurrency } = options;
  const kindSet: ReadonlySet<string> = new Set(kinds);
  const wake = new Wakeup();
  const inFlight = new Set<Promise<void>>();
  const running = new Map<string, ClaimedJob>();
  const claimWhenFree = Math.max(1, Math.floor(concurrency / 4));
  const reserve = claimWhenFree;
  const slots = new AccountSlots({ capacity: concurrency, reserve, lightBelow: LIGHT_ACCOUNT_SLOTS });
  let promisedRoom = 0;
  let drained = false;
  let wakes = 0;
  let lightClaim = { wakes: -1, at: 0 };
  let stopping = false;
  let renewing = false;

  // Room promised to batches in flight (offers) is not free: a claim that took it too let the
  // adopted jobs push an account past the capacity, and every other account onto the reserve.
  const freeSlots = () => Math.min(slots.freeInCapacity(), 2 * concurrency - inFlight.size) - promisedRoom;
  const freeForLight = () => Math.min(slots.freeForLight(), 2 * concurrency - inFlight.size) - promisedRoom;
  const wakeForSlot = () => {
    if (drained) return;
    metrics.wakeups.inc({ source: 'slot' });
    wake.signal();
  };

  async function run(job: ClaimedJob): Promise<void> {
    running.set(job.id, job);
    const account = job.groupKey ?? '';
    slots.add(account);
    let slotHeld = true;
    const externalWorkDone = () => {
      if (!slotHeld) return;
      slotHeld = false;
      const wasLight = slots.isLight(account);
      slots.remove(account);
      // An account that just became light again may have jobs the last light claim left out: the next one need not wait for a wake-up.
      if (!wasLight && slots.isLight(account)) lightClaim.wakes = -1;
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

  /**
   * Up to `limit` due jobs, none of an account at its share while others' are due; when no one
   * else's are, the rest of `limit` from anyone (an account alone uses every slot).
   */
  async function claimFairly(limit: number): Promise<ClaimedJob[]> {
    const wakesBefore = wakes;
    const excluded = slots.overShare();
    const jobs = await claimJobs(context, 'delivery', kinds, limit, excluded);
    if (excluded.length > 0 && jobs.length < limit) jobs.push(...(await claimJobs(context, 'delivery', kinds, limit - jobs.length)));
    drained = jobs.length < limit && wakes === wakesBefore;
    context.log.debug({ asked: limit, got: jobs.length, excluded: excluded.length, slotsUsed: slots.total, inFlight: inFlight.size, drained }, 'claimed');
    return jobs;
  }

  /** The loop is full: a few jobs of light accounts into the reserve, when there may be new ones. */
  async function claimForLightAccounts(): Promise<ClaimedJob[]> {
    const room = Math.min(LIGHT_ACCOUNT_SLOTS, freeForLight());
    const now = Date.now();
    if (room <= 0 || (wakes === lightClaim.wakes && now - lightClaim.at < LIGHT_CLAIM_INTERVAL_MS)) return [];
    lightClaim = { wakes, at: now };
    const jobs = await claimJobs(context, 'delivery', kinds, room, slots.notLight());
    // As many as asked: there may be more light accounts' jobs, so the next step claims again.
    if (jobs.length === room) lightClaim.wakes = -1;
    context.log.debug({ asked: room, got: jobs.length, slotsUsed: slots.total }, 'claimed for light accounts');
    return jobs;
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
      if (kinds.length === 0 || stopping) return 0;
      const free = freeSlots();
      if (free > 0 && (free >= claimWhenFree || slots.total === 0)) return startOnce(await claimFairly(free));
      return startOnce(await claimForLightAccounts());
    },
    offer() {
      if (kinds.length === 0) return undefined;
      const room = stopping ? 0 : Math.max(0, freeSlots());
      promisedRoom += room;
      // An account alone may have every slot; beside others, no more than its share.
      const excluded = slots.holders().length > 1 ? new Set(slots.overShare()) : undefined;
      return leaseOffer(kindSet, { token: newLease(context.workerId), until: Date.now() + leaseMs }, room, excluded);
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
