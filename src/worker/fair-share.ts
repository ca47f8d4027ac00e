/**
 * How one worker shares its delivery capacity between accounts: the delivery loop's slots (jobs
 * claimed and waiting for or making their call) and the outbound thread's call slots both follow
 * it, so that no account can slow another's deliveries (docs/delivery.md, "Fair delivery").
 *
 * - **Work-conserving.** An account alone may use every slot of `capacity`.
 * - **Fair while others want slots.** The next free slot goes to the account holding the fewest;
 *   where slots are taken by claiming from the database, the claim leaves out the jobs of
 *   accounts holding their share or more (`capacity` over the accounts holding slots, plus one
 *   for an account that holds none yet) and falls back to them only when no one else's are due.
 * - **Never a wait behind another account's slow calls.** Calls and jobs are not taken back once
 *   started, so a flood of calls that hang would hold every slot until it times out. `reserve`
 *   slots beyond `capacity` are kept for light accounts (holding fewer than `lightBelow`): an
 *   account with little in flight starts at once, whatever the others hold.
 */
/** Below this many slots an account is light (may use the reserve), in the delivery loop and the outbound limiter alike. */
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

  /** What an account may hold while others want slots: the capacity shared by the holders and one newcomer, never below a light account's. */
  share(): number {
    return Math.max(this.limits.lightBelow, Math.floor(this.limits.capacity / (this.#held.size + 1)));
  }

  /** Accounts at or over their share: a fair claim leaves their jobs to the others. */
  overShare(): string[] {
    const share = this.share();
    return [...this.#held].flatMap(([account, held]) => (held >= share ? [account] : []));
  }

  isLight(account: string): boolean {
    return this.heldBy(account) < this.limits.lightBelow;
  }

  /** Accounts that are not light: the reserve is not for their jobs. */
  notLight(): string[] {
    return [...this.#held].flatMap(([account, held]) => (held >= this.limits.lightBelow ? [account] : []));
  }

  /** Slots free within the capacity (negative when the reserve is in use). */
  freeInCapacity(): number {
    return this.limits.capacity - this.#total;
  }

  /** Slots free for a light account: the capacity and the reserve. */
  freeForLight(): number {
    return this.limits.capacity + this.limits.reserve - this.#total;
  }

  /** May `account` take one more slot now? Within the capacity anyone may; beyond it, only a light account. */
  mayTake(account: string): boolean {
    return this.freeInCapacity() > 0 || (this.freeForLight() > 0 && this.isLight(account));
  }
}
