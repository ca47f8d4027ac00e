import type { Logger } from '../logger.js';
import type { QueueMetrics } from '../metrics.js';
import type { Db } from '../storage/database.js';
import { claimDeliveries, handOff, renewLeases, type Delivery, type HandOff } from '../storage/deliveries.js';
import { lightTransaction } from '../storage/light-transaction.js';
import { newLease } from '../storage/queue/index.js';
import { adoptable, assertClaimed, HeldDeliveries } from './delivery-ownership.js';
import { Wakeup } from './wakeup.js';

/**
 * The delivery loop: a bounded prefetch of the delivery queue, in the manner of graphile-worker's
 * `LocalQueue`. It takes due deliveries from the database in batches and starts each at once; the
 * calls wait for their turn in the outbound limiter, which alone decides whose call goes next
 * (worker/outbound/concurrency-limiter.ts, "Fair delivery" in docs/delivery.md). What a reader needs:
 *
 * - **Delivery**, **lease**, **claim**, **hand-off**: storage/deliveries.ts; who may run one and
 *   what a late write does: delivery-ownership.ts.
 * - **Capacity.** At most `capacity` deliveries are held before or in their call (`calling`);
 *   one whose call is over no longer counts while its outcome is written (a group commit), and as
 *   many again may be there.
 * - **Account bound.** The prefetch keeps room for one more account: while n accounts hold
 *   deliveries, each may hold at most `capacity / (n + 1)` (`share`). A claim or a hand-off takes
 *   at most a newcomer's share, and leaves out every account it could take past its bound (the
 *   claim steps over their backlogs in SQL: storage/queue/due-jobs.ts). So an account alone holds
 *   half the prefetch, and a flood whose calls hang can never fill it; how the calls share the
 *   connections is the limiter's.
 * - **Room**: the capacity left, less what a claim or a hand-off in flight was promised (`promised`);
 *   the two never count the same room twice.
 * - **Modes** (`Mode`): `claiming` while the queue may have due deliveries (a claim when a quarter
 *   of the capacity or a newcomer's whole share is free, or nothing is held); `drained` once a
 *   claim got fewer than it asked
 *   and no wake-up came meanwhile — freed room then wakes no one (each claim is a write), and work
 *   comes back with a wake-up, the poll, or an account it left out dropping far enough below its
 *   bound; `stopping` takes nothing while the runs in flight go on; `stopped` once they ended.
 *   `enter` checks each transition and the invariants (`check`).
 * - **Wake-up**: new deliveries were announced (a commit here, NOTIFY from elsewhere, the poll).
 * - **Heartbeat**: every lease/3, one statement renews the leases held.
 * - **Upkeep**: every UPKEEP_MS, the deliverer's own periodic work (the circuit breakers' probes and
 *   releases: worker/notifications/circuit-breakers.ts); what it made due wakes the loop.
 */
type Mode = 'claiming' | 'drained' | 'stopping' | 'stopped';

/** How often the deliverer's upkeep runs (the circuit breakers' probes and releases). */
const UPKEEP_MS = 250;

const TRANSITIONS: Record<Mode, readonly Mode[]> = {
  claiming: ['drained', 'stopping'],
  drained: ['claiming', 'stopping'],
  stopping: ['stopped'],
  stopped: [],
};

/** What runs one delivery: the notification engine (worker/notifications/deliver-notification.ts). */
export interface Deliverer {
  /**
   * Makes the delivery's attempt and settles it under its lease; calls `callOver` once its call
   * (if any) is over. Resolves false when the lease was lost meanwhile (nothing written). Throws
   * when the run ended without an outcome.
   */
  deliver(delivery: Delivery, callOver: () => void): Promise<boolean>;
  /** A run that threw: tried again later or, after RUNS_WITHOUT_OUTCOME, ended failed. */
  runFailed(delivery: Delivery, error: unknown): Promise<void>;
  /** The deliverer's own periodic work, every UPKEEP_MS (the circuit breakers' probes and releases); answers how many deliveries it made due. */
  upkeep?(): Promise<number>;
}

export interface DeliveryLoop {
  readonly wake: Wakeup;
  readonly mode: Mode;
  /** New deliveries were announced: the queue is not drained any more. */
  woken(): void;
  /** Claims and starts due deliveries as far as there is room; returns how many. */
  step(): Promise<number>;
  /** A hand-off for a batch's transaction (room may be 0: it then only counts what it declined). */
  offer(): HandOff;
  /** After the batch: start what it took if it committed (and its lease has not ended), and give the promised room back. */
  adopt(offer: HandOff, committed: boolean): void;
  /** Takes nothing more; runs in flight go on (their leases still renewed). */
  stop(): void;
  /** Resolves when no run is in flight any more, then stops renewing leases. */
  drain(): Promise<void>;
}

export interface DeliveryLoopOptions {
  db: Db;
  log: Logger;
  metrics: QueueMetrics;
  workerId: string;
  leaseMs: number;
  deliverer: Deliverer;
  /** Deliveries held before or in their call (default 512). */
  capacity?: number;
  /** The time leases are written and compared with (default Date.now; tests move it to end leases). */
  clock?: () => number;
}

export function createDeliveryLoop(options: DeliveryLoopOptions): DeliveryLoop {
  const { db, log, metrics, workerId, leaseMs, deliverer } = options;
  const capacity = options.capacity ?? 512;
  const clock = options.clock ?? Date.now;
  const refillAt = Math.max(1, Math.floor(capacity / 4));
  const wake = new Wakeup();
  const held = new HeldDeliveries();
  const runs = new Set<Promise<void>>();
  /** Per account, its deliveries before or in their call. */
  const calling = new Map<string, number>();
  const state = { mode: 'claiming' as Mode, total: 0, promised: 0, wakes: 0 };
  /** The accounts the last claim left out. */
  let leftOut = new Set<string>();

  /** The most an account may hold while `holders` accounts hold deliveries. */
  const share = (holders: number) => Math.max(1, Math.floor(capacity / (holders + 1)));
  const room = () => Math.min(capacity - state.total, 2 * capacity - runs.size) - state.promised;
  /** What the next claim or hand-off may take (a newcomer's share at most), and the accounts it could take past their bound. */
  const intake = () => {
    const limit = Math.max(0, Math.min(room(), share(calling.size + 1)));
    const bound = share(calling.size);
    return { limit, leftOut: [...calling].flatMap(([account, count]) => (count + limit > bound ? [account] : [])) };
  };
  /** Claims go in batches: when a quarter of the capacity, or a newcomer's whole share, is free; or when nothing is held. */
  const worthClaiming = (limit: number) => limit > 0 && (limit >= Math.min(refillAt, share(calling.size + 1)) || state.total === 0);
  const accepting = () => state.mode === 'claiming' || state.mode === 'drained';

  function check(): void {
    if (state.promised < 0 || state.total < 0) throw new Error(`delivery loop: negative count (promised ${state.promised}, calling ${state.total})`);
    if (runs.size > 2 * capacity) throw new Error(`delivery loop: ${runs.size} runs in flight, more than twice the capacity ${capacity}`);
    if (state.mode === 'stopped' && (runs.size > 0 || held.size > 0 || state.promised > 0)) throw new Error('delivery loop: stopped with runs in flight');
  }
  function enter(mode: Mode): void {
    if (mode === state.mode) return;
    if (!TRANSITIONS[state.mode].includes(mode)) throw new Error(`delivery loop: no transition from ${state.mode} to ${mode}`);
    state.mode = mode;
    check();
  }

  function take(account: string): void {
    calling.set(account, (calling.get(account) ?? 0) + 1);
    state.total += 1;
  }
  /** Its call is over: the room is free, and an account that was at its bound may have deliveries a claim left out. */
  function callOver(account: string): void {
    const count = calling.get(account)! - 1;
    if (count === 0) calling.delete(account);
    else calling.set(account, count);
    state.total -= 1;
    // Left out of the last claim, the account may now take a claim's worth: its backlog is due again.
    if (state.mode === 'drained' && leftOut.has(account) && !intake().leftOut.includes(account)) enter('claiming');
    roomFreed();
  }
  function roomFreed(): void {
    if (state.mode !== 'claiming') return;
    metrics.wakeups.inc({ source: 'slot' });
    wake.signal();
  }

  async function run(delivery: Delivery): Promise<void> {
    let counted = true;
    const over = () => {
      if (!counted) return;
      counted = false;
      callOver(delivery.accountId);
    };
    try {
      if (!(await deliverer.deliver(delivery, over))) metrics.leasesLost.inc();
    } catch (error) {
      await deliverer.runFailed(delivery, error);
    } finally {
      held.release(delivery);
      over();
    }
  }

  /** Starts each delivery under the lease just acquired; one whose run here has not ended yet starts after it (rule 3). */
  function start(deliveries: readonly Delivery[]): number {
    for (const delivery of deliveries) {
      take(delivery.accountId);
      const runHere = () => {
        held.hold(delivery);
        return run(delivery);
      };
      const previous = held.ended(delivery.id);
      const promise = (previous ? previous.then(runHere) : runHere())
        .catch((error: unknown) => log.error({ err: error, notificationId: delivery.id }, 'a delivery could not start; its lease will end and a claim will take it'))
        .finally(() => {
          runs.delete(promise);
          roomFreed();
        });
      runs.add(promise);
    }
    check();
    return deliveries.length;
  }

  /** Claims up to `limit`, none of `excludeAccounts` and none this process runs whose lease may have ended; the room is promised meanwhile. */
  async function claim(limit: number, excludeAccounts: string[]): Promise<Delivery[]> {
    const wakesBefore = state.wakes;
    const now = clock();
    const excludeIds = held.lapsedBy(now);
    leftOut = new Set(excludeAccounts);
    state.promised += limit;
    let deliveries: Delivery[];
    try {
      deliveries = await lightTransaction(db, (tx) => claimDeliveries(tx, { workerId, limit, leaseMs, now, excludeAccounts, excludeIds }), { singleStatement: true });
    } finally {
      state.promised -= limit;
    }
    assertClaimed(deliveries, now, excludeIds);
    metrics.claims.inc({ loop: 'delivery' });
    metrics.claimedJobs.inc({ loop: 'delivery' }, deliveries.length);
    // Fewer than asked and no wake-up meanwhile: it took what it could (the rest, if any, is of the accounts it left out).
    if (accepting()) enter(deliveries.length < limit && state.wakes === wakesBefore ? 'drained' : 'claiming');
    log.debug({ asked: limit, got: deliveries.length, leftOut: excludeAccounts.length, calling: state.total, mode: state.mode }, 'claimed');
    return deliveries;
  }

  /** The renewal in flight, if any: one at a time, and `drain` waits for it. */
  let renewing: Promise<void> | undefined;
  const heartbeat = setInterval(
    () => {
      if (held.size === 0) return;
      if (renewing) return metrics.leaseRenewals.inc({ outcome: 'skipped' });
      renewing = lightTransaction(db, (tx) => renewLeases(tx, held.all(), clock() + leaseMs), { singleStatement: true })
        .then((renewed) => {
          metrics.leaseRenewals.inc({ outcome: 'ok' });
          metrics.renewedLeases.inc(renewed);
        })
        .catch((error) => {
          metrics.leaseRenewals.inc({ outcome: 'failed' });
          log.warn({ err: error }, 'could not renew delivery leases');
        })
        .finally(() => (renewing = undefined));
    },
    Math.max(50, Math.floor(leaseMs / 3)),
  );
  heartbeat.unref();

  /** The deliverer's upkeep, every UPKEEP_MS on its own timer (not at the loop's steps, which may be a poll apart); one at a time. */
  let tending: Promise<void> | undefined;
  const upkeep = deliverer.upkeep
    ? setInterval(() => {
        if (tending || !accepting()) return;
        tending = deliverer.upkeep!()
          .then((madeDue) => {
            if (madeDue > 0 && accepting()) {
              state.wakes += 1;
              if (state.mode === 'drained') enter('claiming');
              wake.signal();
            }
          })
          .catch((error: unknown) => log.warn({ err: error }, 'the circuit breakers could not be tended; trying again'))
          .finally(() => (tending = undefined));
      }, UPKEEP_MS)
    : undefined;
  upkeep?.unref();

  return {
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
      if (!accepting()) return 0;
      const { limit, leftOut: excluded } = intake();
      return worthClaiming(limit) ? start(await claim(limit, excluded)) : 0;
    },
    offer() {
      const { limit, leftOut: excluded } = accepting() ? intake() : { limit: 0, leftOut: [] };
      state.promised += limit;
      return handOff({ token: newLease(workerId), until: clock() + leaseMs }, limit, new Set(excluded));
    },
    adopt(offer, committed) {
      state.promised -= offer.room + offer.taken.length;
      if (!committed) return check();
      const { start: startNow, lapsed } = adoptable(offer, clock());
      start(startNow);
      if (lapsed.length > 0) {
        // A stalled event loop or a slow commit: the hand-off's lease ended before it could start. A claim takes them.
        log.warn({ deliveries: lapsed.length, leaseMs }, 'a batch committed after the lease it gave its deliveries had ended: they are left to a claim');
        this.woken();
      }
      if (offer.declined > 0) this.woken();
    },
    stop() {
      if (accepting()) enter('stopping');
    },
    async drain() {
      while (runs.size > 0) await Promise.all(runs);
      if (state.mode === 'stopping') {
        clearInterval(heartbeat);
        clearInterval(upkeep);
        await tending;
        // A renewal that began before the last run ended must not outlive the loop (and the pool it writes through).
        await renewing;
        enter('stopped');
      }
    },
  };
}
