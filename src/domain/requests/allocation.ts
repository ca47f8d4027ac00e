import type { Allocation } from './items.js';
import type { ExperienceSnapshot } from './registration.js';

/** Current stock of a prize: a count, null for unlimited, undefined when the prize no longer exists. */
export type StockLevel = number | null | undefined;

export const prizeKey = (experienceId: string, prizeId: string): string => `${experienceId}\u0000${prizeId}`;

export interface StockAllocation {
  /** Per request (same order as given), per prize of its snapshot. */
  allocations: Allocation[][];
  /** Units to take from each limited prize: key → units. */
  taken: Map<string, number>;
}

/**
 * Hands out stock to a batch of requests in order: the first requests get the units that are
 * left, the others an out-of-stock cancellation. One request takes one unit of each prize. A
 * request whose account is not `active` takes nothing: each of its prizes is `account-inactive`.
 * Pure; the caller takes `taken` units per prize atomically in the same transaction.
 */
export function allocateStock(snapshots: ExperienceSnapshot[], stock: ReadonlyMap<string, StockLevel>, active: readonly boolean[] = []): StockAllocation {
  const remaining = new Map(stock);
  const taken = new Map<string, number>();
  const allocations = snapshots.map((snapshot, index) =>
    snapshot.prizes.map((prize): Allocation => {
      if (active[index] === false) return 'account-inactive';
      const key = prizeKey(snapshot.id, prize.id);
      if (!remaining.has(key) || remaining.get(key) === undefined) return 'unavailable';
      const left = remaining.get(key);
      if (left === null) return 'taken';
      if (left! <= 0) return 'out-of-stock';
      remaining.set(key, left! - 1);
      taken.set(key, (taken.get(key) ?? 0) + 1);
      return 'taken';
    }),
  );
  return { allocations, taken };
}
