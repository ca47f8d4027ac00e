/**
 * How one worker shares its callback calls between accounts, so that no account can slow
 * another's deliveries (docs/delivery.md, "Fair delivery"). The one fairness layer: the outbound
 * limiter (concurrency-limiter.ts) asks these questions for every call it starts.
 *
 * - **Work-conserving.** An account alone may use every slot of `capacity`.
 * - **Fair while others want slots.** The next free slot goes to the account holding the fewest.
 * - **Never a wait behind another account's slow calls.** Calls are not taken back once started,
 *   so a flood of calls that hang would hold every slot until it times out. `reserve` slots
 *   beyond `capacity` are kept for light accounts (holding fewer than `lightBelow`): an account
 *   with little in flight starts at once, whatever the others hold.
 */
/** Below this many calls in flight an account is light (may use the reserve). */
export const LIGHT_ACCOUNT_SLOTS = 4;

export interface FairShareLimits {
  /** Slots any mix of accounts may fill. */
  capacity: number;
  /** Slots beyond `capacity` that only light accounts may use. */
  reserve: number;
  /** An account holding fewer slots than this is light. */
  lightBelow: number;
}

/** The slots each account holds, and the rules above as questions about them. Not thread-safe: one per loop or thread. */
export class AccountSlots {
  readonly #held = new Map<string, number>();
  #total = 0;

  constructor(readonly limits: FairShareLimits) {
    if (!(limits.capacity >= 1 && limits.reserve >= 0 && limits.lightBelow >= 1)) throw new RangeError('fair-share limits: capacity ≥ 1, reserve ≥ 0, lightBelow ≥ 1');
  }

  get total(): number {
    return this.#total;
  }

  heldBy(account: string): number {
    return this.#held.get(account) ?? 0;
  }

  /** Each account holding slots, with how many. */
  holders(): [account: string, held: number][] {
    return [...this.#held];
  }

  add(account: string): void {
    this.#held.set(account, this.heldBy(account) + 1);
    this.#total += 1;
  }

  remove(account: string): void {
    const left = this.heldBy(account) - 1;
    if (left < 0) throw new Error(`fair-share: account ${account} holds no slot`);
    if (left === 0) this.#held.delete(account);
    else this.#held.set(account, left);
    this.#total -= 1;
  }

  isLight(account: string): boolean {
    return this.heldBy(account) < this.limits.lightBelow;
  }

  /** May `account` take one more slot now? Within the capacity anyone may; beyond it, only a light account, up to the reserve. */
  mayTake(account: string): boolean {
    return this.#total < this.limits.capacity || (this.#total < this.limits.capacity + this.limits.reserve && this.isLight(account));
  }
}
