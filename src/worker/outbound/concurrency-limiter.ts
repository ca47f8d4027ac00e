import { AccountSlots, LIGHT_ACCOUNT_SLOTS } from '../fair-share.js';

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
export interface CallKey {
  account: string;
  address: string;
}

interface Waiter {
  /** Arrival order, for FIFO among equals. */
  seq: number;
  address: string;
  start: () => void;
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
  /** Calls in flight per account and address. */
  const byAddress = new Map<string, number>();
  /** Each waiting account's waiters, oldest first. */
  const waiting = new Map<string, Waiter[]>();
  let waitingCount = 0;
  let arrivals = 0;

  const pairKey = (account: string, address: string) => `${account}\u0000${address}`;
  const addressFree = (account: string, address: string) => (byAddress.get(pairKey(account, address)) ?? 0) < limits.perAddress;

  const acquire = ({ account, address }: CallKey) => {
    slots.add(account);
    const pair = pairKey(account, address);
    byAddress.set(pair, (byAddress.get(pair) ?? 0) + 1);
  };

  const release = ({ account, address }: CallKey) => {
    slots.remove(account);
    const pair = pairKey(account, address);
    const left = byAddress.get(pair)! - 1;
    if (left === 0) byAddress.delete(pair);
    else byAddress.set(pair, left);
  };

  /** The waiter to start now: of the accounts that may take a slot, the one holding fewest, its oldest waiter whose address is under its cap. */
  const next = (): { account: string; index: number } | undefined => {
    let best: { account: string; index: number; held: number; seq: number } | undefined;
    for (const [account, queue] of waiting) {
      if (!slots.mayTake(account)) continue;
      const held = slots.heldBy(account);
      if (best && held > best.held) continue;
      const index = queue.findIndex((waiter) => addressFree(account, waiter.address));
      if (index < 0) continue;
      const seq = queue[index]!.seq;
      if (!best || held < best.held || seq < best.seq) best = { account, index, held, seq };
    }
    return best;
  };

  const startWaiters = () => {
    for (let found = next(); found; found = next()) {
      const queue = waiting.get(found.account)!;
      const [waiter] = queue.splice(found.index, 1);
      if (queue.length === 0) waiting.delete(found.account);
      waitingCount--;
      acquire({ account: found.account, address: waiter!.address });
      waiter!.start();
    }
  };

  return {
    run<T>(key: CallKey, task: () => Promise<T>): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        const start = () => {
          Promise.resolve()
            .then(task)
            .then(resolve, reject)
            .finally(() => {
              release(key);
              startWaiters();
            });
        };
        const waiter = { seq: arrivals++, address: key.address, start };
        const queue = waiting.get(key.account);
        if (queue) queue.push(waiter);
        else waiting.set(key.account, [waiter]);
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
