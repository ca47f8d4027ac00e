import { lightTransaction } from '../storage/light-transaction.js';
import { JOBS_TABLE_QUEUE, leaseOffer, newLease, type ClaimedJob, type LeaseOffer, type StandaloneQueue } from '../storage/queue/index.js';
import { adoptable, HeldDeliveries } from './delivery-ownership.js';
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
 *   between claims.
 * - **Modes** (`DeliveryLoopMode`): `claiming` while the queue may have due jobs; `drained` once a
 *   claim got fewer jobs than it asked for and no wake-up came meanwhile (it read an empty queue):
 *   freed slots then no longer wake the loop (each claim is a write), and new work arrives with a
 *   wake-up, or the poll; `stopping` claims nothing and offers no room while the jobs in flight go
 *   on; `stopped` once they are over. Whether the loop is full is not a mode but a count (`slots`).
 * - **Offers.** A transactional batch of this worker may take, in its own transaction, the jobs it
 *   enqueues for this loop (`offer`): up to the free slots not promised to another batch in
 *   flight. They start right after its commit (`adopt`), without a claim. Promised room is not
 *   free to claims either, or the adopted jobs would push the loop past its capacity.
 * - **Ownership** (delivery-ownership.ts): a job runs here only under the lease its claim or its
 *   hand-off wrote, once at a time; leases are renewed every JOB_LEASE/3 while the jobs run
 *   (`heartbeat`), one renewal at a time.
 * - **Fair between accounts** (fair-share.ts; docs/delivery.md, "Fair delivery"). Slots are
 *   counted per account (the job's group). A claim leaves out the accounts holding their share and
 *   takes theirs only when no one else's are due; an offer takes no job of an account over its
 *   share while other accounts hold slots. With every slot taken, a quarter as many again are kept
 *   for light accounts: claimed a few at a time, when new jobs were announced (or once a second,
 *   for jobs that came due by time), so that a delivery of an account with little in flight is
 *   never queued behind another account's calls, even calls that hang until their timeout.
 */
/** Where the loop is; the transitions allowed are `TRANSITIONS`. */
type DeliveryLoopMode = 'claiming' | 'drained' | 'stopping' | 'stopped';

const TRANSITIONS: Record<DeliveryLoopMode, readonly DeliveryLoopMode[]> = {
  claiming: ['drained', 'stopping'],
  drained: ['claiming', 'stopping'],
  stopping: ['stopped'],
  stopped: [],
};

export interface DeliveryLoop {
  readonly kinds: readonly string[];
  readonly wake: Wakeup;
  readonly mode: DeliveryLoopMode;
  /** New jobs were announced: the queue is not drained any more. */
  woken(): void;
  /** Claims and starts due jobs as far as slots allow; returns how many. */
  step: () => Promise<number>;
  /** An offer for a batch's transaction (room may be 0: it then only counts what it declined). */
  offer(): LeaseOffer | undefined;
  /** After the batch: start what it took if it committed (and its lease has not ended), and give the promised room back. */
  adopt(offer: LeaseOffer | undefined, committed: boolean): void;
  /** Claims nothing more; jobs in flight go on (their leases still renewed). */
  stop(): void;
  /** Resolves when no job is in flight any more, then stops renewing leases. */
  drain(): Promise<void>;
}

/** How often, at most, a full loop claims for light accounts when no new job was announced (jobs that came due by time). */
const LIGHT_CLAIM_INTERVAL_MS = 1000;

export interface DeliveryLoopOptions {
  kinds: string[];
  concurrency: number;
  /** Where the jobs live (default: the jobs table; deliveries: their notification rows). */
  queue?: StandaloneQueue;
  /** The time leases are written and compared with (default Date.now; tests move it to end leases). */
  clock?: () => number;
}

export function createDeliveryLoop(context: WorkerContext, options: DeliveryLoopOptions): DeliveryLoop {
  const { deps, leaseMs, metrics } = context;
  const { kinds, concurrency } = options;
  const clock = options.clock ?? Date.now;
  const queue = options.queue ?? JOBS_TABLE_QUEUE;
  const kindSet: ReadonlySet<string> = new Set(kinds);
  const wake = new Wakeup();
  const inFlight = new Set<Promise<void>>();
  const held = new HeldDeliveries();
  const claimWhenFree = Math.max(1, Math.floor(concurrency / 4));
  const reserve = claimWhenFree;
  const slots = new AccountSlots({ capacity: concurrency, reserve, lightBelow: LIGHT_ACCOUNT_SLOTS });
  const state = {
    mode: 'claiming' as DeliveryLoopMode,
    /** Room promised to batches in flight (offers, not yet adopted) and to the claim in flight. */
    promisedRoom: 0,
    /** Wake-ups so far: a claim that began before the last one may have missed its jobs. */
    wakes: 0,
    /** The last claim for light accounts: at which wake-up count, when. */
    lightClaim: { wakes: -1, at: 0 },
  };
  const enter = (mode: DeliveryLoopMode) => {
    if (mode === state.mode) return;
    if (!TRANSITIONS[state.mode].includes(mode)) throw new Error(`delivery loop: no transition from ${state.mode} to ${mode}`);
    state.mode = mode;
  };
  const accepting = () => state.mode === 'claiming' || state.mode === 'drained';

  // Room promised to batches in flight (offers) or to the claim in flight is not free: a claim and
  // an offer that both took it, in either order, let one account past the capacity and the reserve,
  // and no light account's job was claimed until that account's calls ended.
  const freeSlots = () => Math.min(slots.freeInCapacity(), 2 * concurrency - inFlight.size) - state.promisedRoom;
  const freeForLight = () => Math.min(slots.freeForLight(), 2 * concurrency - inFlight.size) - state.promisedRoom;
  const wakeForSlot = () => {
    if (state.mode !== 'claiming') return;
    metrics.wakeups.inc({ source: 'slot' });
    wake.signal();
  };

  async function run(job: ClaimedJob): Promise<void> {
    const account = job.groupKey ?? '';
    slots.add(account);
    let slotHeld = true;
    const externalWorkDone = () => {
      if (!slotHeld) return;
      slotHeld = false;
      const wasLight = slots.isLight(account);
      slots.remove(account);
      // An account that just became light again may have jobs the last light claim left out: the next one need not wait for a wake-up.
      if (!wasLight && slots.isLight(account)) state.lightClaim.wakes = -1;
      wakeForSlot();
    };
    try {
      const outcome = await (context.handlers[job.kind] as StandaloneJobHandler).handle(job, context.job, { externalWorkDone });
      // A handler that settled its job itself (completed or rescheduled) has released the lease.
      if (outcome !== 'settled' && !(await queue.end(deps.db, [job])).has(job.id)) metrics.leasesLost.inc();
    } catch (error) {
      await recordFailure(context, job, error, queue);
    } finally {
      held.release(job);
      externalWorkDone();
    }
  }

  /** Claims up to `limit` due jobs, none of `excludeGroups` and none this process runs whose lease may have ended. */
  function claim(limit: number, excludeGroups?: readonly string[]): Promise<ClaimedJob[]> {
    const now = clock();
    return claimJobs(context, 'delivery', kinds, limit, { now, queue, excludeIds: held.lapsedBy(now), ...(excludeGroups ? { excludeGroups } : {}) });
  }

  /**
   * Up to `limit` due jobs, none of an account at its share while others' are due; when no one
   * else's are, the rest of `limit` from anyone (an account alone uses every slot).
   */
  async function claimFairly(limit: number): Promise<ClaimedJob[]> {
    const wakesBefore = state.wakes;
    const excluded = slots.overShare();
    const jobs = await claim(limit, excluded);
    if (excluded.length > 0 && jobs.length < limit) jobs.push(...(await claim(limit - jobs.length)));
    // Fewer than asked, with no wake-up meanwhile: the claim read an empty queue.
    if (accepting()) enter(jobs.length < limit && state.wakes === wakesBefore ? 'drained' : 'claiming');
    context.log.debug({ asked: limit, got: jobs.length, excluded: excluded.length, slotsUsed: slots.total, inFlight: inFlight.size, mode: state.mode }, 'claimed');
    return jobs;
  }

  /** The loop is full: up to `room` jobs of light accounts into the reserve, when there may be new ones. */
  async function claimForLightAccounts(room: number): Promise<ClaimedJob[]> {
    const now = Date.now();
    if (state.wakes === state.lightClaim.wakes && now - state.lightClaim.at < LIGHT_CLAIM_INTERVAL_MS) return [];
    state.lightClaim = { wakes: state.wakes, at: now };
    const jobs = await claim(room, slots.notLight());
    // As many as asked: there may be more light accounts' jobs, so the next step claims again.
    if (jobs.length === room) state.lightClaim.wakes = -1;
    context.log.debug({ asked: room, got: jobs.length, slotsUsed: slots.total }, 'claimed for light accounts');
    return jobs;
  }

  /**
   * Claims with `room` promised while the claim is in flight (an offer made meanwhile cannot
   * promise it again), then starts the jobs in the same turn of the event loop as the promise ends.
   */
  async function claimAndStart(room: number, claimUpTo: (room: number) => Promise<ClaimedJob[]>): Promise<number> {
    state.promisedRoom += room;
    let jobs: ClaimedJob[];
    try {
      jobs = await claimUpTo(room);
    } finally {
      state.promisedRoom -= room;
    }
    return start(jobs);
  }

  /** Starts each job under the lease just acquired; one whose run here has not ended yet starts after it (delivery-ownership.ts, rule 3). */
  function start(jobs: readonly ClaimedJob[]): number {
    for (const job of jobs) {
      const runHere = () => {
        held.hold(job);
        return run(job);
      };
      const previous = held.ended(job.id);
      const promise = (previous ? previous.then(runHere) : runHere())
        .catch((error: unknown) => context.log.error({ err: error, jobId: job.id }, 'a delivery could not start; its lease will end and a claim will take it'))
        .finally(() => {
          inFlight.delete(promise);
          wakeForSlot();
        });
      inFlight.add(promise);
    }
    return jobs.length;
  }

  let renewing = false;
  const heartbeat = setInterval(
    () => {
      if (held.size === 0) return;
      if (renewing) return metrics.leaseRenewals.inc({ outcome: 'skipped' });
      renewing = true;
      lightTransaction(deps.db, (tx) => queue.renew(tx, held.all(), clock() + leaseMs, clock()), { singleStatement: true })
        .then((renewed) => {
          metrics.leaseRenewals.inc({ outcome: 'ok' });
          metrics.renewedLeases.inc(renewed);
        })
        .catch((error) => {
          metrics.leaseRenewals.inc({ outcome: 'failed' });
          context.log.warn({ err: error }, 'could not renew job leases');
        })
        .finally(() => (renewing = false));
    },
    Math.max(50, Math.floor(leaseMs / 3)),
  );
  heartbeat.unref();

  return {
    kinds,
    wake,
    get mode() {
      return state.mode;
    },
    woken() {
      state.wakes += 1;
      if (state.mode === 'drained') enter('claiming');
      wake.signal();
    },
    async step() {
      if (kinds.length === 0 || !accepting()) return 0;
      const free = freeSlots();
      if (free > 0 && (free >= claimWhenFree || slots.total === 0)) return claimAndStart(free, claimFairly);
      const room = Math.min(LIGHT_ACCOUNT_SLOTS, freeForLight());
      return room > 0 ? claimAndStart(room, claimForLightAccounts) : 0;
    },
    offer() {
      if (kinds.length === 0) return undefined;
      const room = accepting() ? Math.max(0, freeSlots()) : 0;
      state.promisedRoom += room;
      // An account alone may have every slot; beside others, no more than its share.
      const excluded = slots.holders().length > 1 ? new Set(slots.overShare()) : undefined;
      return leaseOffer(kindSet, { token: newLease(context.workerId), until: clock() + leaseMs }, room, excluded);
    },
    adopt(offer, committed) {
      if (!offer) return;
      state.promisedRoom -= offer.room + offer.taken.length;
      if (!committed) return;
      const { start: startNow, lapsed } = adoptable(offer, clock());
      start(startNow);
      if (lapsed.length > 0) {
        // A stalled event loop or a slow commit: the hand-off's lease ended before it could start. A claim takes them.
        context.log.warn({ jobs: lapsed.length, leaseMs }, 'a batch committed after the lease it gave its deliveries had ended: they are left to a claim');
        this.woken();
      }
      if (offer.declined > 0) this.woken();
    },
    stop() {
      if (state.mode === 'claiming' || state.mode === 'drained') enter('stopping');
    },
    async drain() {
      while (inFlight.size > 0) await Promise.all(inFlight);
      if (state.mode === 'stopping') {
        clearInterval(heartbeat);
        enter('stopped');
      }
    },
  };
}
