import { AccountSlots, LIGHT_ACCOUNT_SLOTS } from './fair-share.js';

/**
 * Bounds the callback calls in flight and shares them fairly between accounts (fair-share.ts):
 * - `overall` calls whoever makes them; an account alone may use all of them;
 * - when a call ends, the waiting account holding the fewest calls starts next (oldest first
 *   among equals), so a flooding account's share shrinks to a fair one as its calls end;
 * - `reserve` more calls only for accounts with fewer than `lightBelow` in flight: an account's
 *   first calls never wait behind another account's, even when those hang until their timeout;
 * - at most `perAddress` calls of one account to one resolved address, however its URLs spell
 *   the host or the port: one slow receiver cannot take all of its account's calls either.
 *   (Per account, so that tenants whose receivers share a provider's address do not share a cap.)
 * A waiter blocked by its own cap is skipped: the calls behind it start.
 */

export interface ConcurrencyLimits {
  overall: number;
  /** Calls in flight per account and resolved address. */
  perAddress: number;
  /** Calls beyond `overall` for accounts with fewer than `lightBelow` in flight. */
  reserve: number;
  lightBelow: number;
}

export const DEFAULT_CONCURRENCY_LIMITS: ConcurrencyLimits = { overall: 64, perAddress: 8, reserve: 16, lightBelow: LIGHT_ACCOUNT_SLOTS };

/** Who a call is for and where it goes: the account, and the address its host resolved to (or the host, when it did not resolve). */
interface CallKey {
  account: string;
  address: string;
}

interface Waiter {
  /** Arrival order, for FIFO among equals. */
  seq: number;
  start: () => void;
}

/** One account's calls to one address: how many are in flight, and the waiters, oldest first. */
interface AddressQueue {
  active: number;
  waiters: Waiter[];
}

export interface ConcurrencyLimiter {
  /** Runs `task` once a slot is free for its account and address; the slot is released when it settles. */
  run<T>(key: CallKey, task: () => Promise<T>): Promise<T>;
  /** Calls running and waiting, for metrics and tests. */
  stats(): { active: number; waiting: number; activeByAccount: Record<string, number> };
}

export function createConcurrencyLimiter(limits: ConcurrencyLimits = DEFAULT_CONCURRENCY_LIMITS): ConcurrencyLimiter {
  if (!(limits.perAddress >= 1)) throw new RangeError('concurrency limits must be at least 1');
  const slots = new AccountSlots({ capacity: limits.overall, reserve: limits.reserve, lightBelow: limits.lightBelow });
  /** Per account, its addresses with calls in flight or waiting. */
  const accounts = new Map<string, Map<string, AddressQueue>>();
  /** How many calls each account has waiting: the only accounts a freed slot looks at. */
  const waitingByAccount = new Map<string, number>();
  let waitingCount = 0;
  let arrivals = 0;

  const queueOf = ({ account, address }: CallKey): AddressQueue => {
    let addresses = accounts.get(account);
    if (!addresses) accounts.set(account, (addresses = new Map<string, AddressQueue>()));
    let queue = addresses.get(address);
    if (!queue) addresses.set(address, (queue = { active: 0, waiters: [] }));
    return queue;
  };

  const release = ({ account, address }: CallKey) => {
    slots.remove(account);
    const addresses = accounts.get(account)!;
    const queue = addresses.get(address)!;
    queue.active -= 1;
    if (queue.active === 0 && queue.waiters.length === 0) {
      addresses.delete(address);
      if (addresses.size === 0) accounts.delete(account);
    }
  };

  /** The address queue to start from now: of the accounts that may take a slot, the one holding fewest, its oldest waiter under its address's cap. */
  const next = (): AddressQueue | undefined => {
    let best: { queue: AddressQueue; held: number; seq: number } | undefined;
    for (const account of waitingByAccount.keys()) {
      if (!slots.mayTake(account)) continue;
      const held = slots.heldBy(account);
      if (best && held > best.held) continue;
      for (const queue of accounts.get(account)!.values()) {
        const first = queue.waiters[0];
        if (!first || queue.active >= limits.perAddress) continue;
        if (!best || held < best.held || first.seq < best.seq) best = { queue, held, seq: first.seq };
      }
    }
    return best?.queue;
  };

  const startWaiters = () => {
    for (let queue = next(); queue; queue = next()) {
      const waiter = queue.waiters.shift()!;
      waitingCount--;
      waiter.start();
    }
  };

  return {
    run<T>(key: CallKey, task: () => Promise<T>): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        const queue = queueOf(key);
        const start = () => {
          slots.add(key.account);
          queue.active += 1;
          const left = waitingByAccount.get(key.account)! - 1;
          if (left === 0) waitingByAccount.delete(key.account);
          else waitingByAccount.set(key.account, left);
          Promise.resolve()
            .then(task)
            .then(resolve, reject)
            .finally(() => {
              release(key);
              startWaiters();
            });
        };
        queue.waiters.push({ seq: arrivals++, start });
        waitingByAccount.set(key.account, (waitingByAccount.get(key.account) ?? 0) + 1);
        waitingCount++;
        // Starts it now if its turn has come: most calls never wait.
        startWaiters();
      });
    },
    stats() {
      return { active: slots.total, waiting: waitingCount, activeByAccount: Object.fromEntries(slots.holders()) };
    },
  };
}
