/**
 * Counts failed client authentications per key (client id, source address) in a fixed window.
 * Past `limit` failures the key is refused until the window ends. In memory and per process:
 * with N API processes an attacker gets at most N × limit guesses per window, against 2^256.
 */
export class FailureLimiter {
  readonly #windows = new Map<string, { failures: number; resetAt: number }>();

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
    private readonly clock: () => number = Date.now,
  ) {}

  /** Seconds until the key may try again, or 0 when it may try now. */
  retryAfterSeconds(key: string): number {
    const entry = this.#windows.get(key);
    if (!entry) return 0;
    const now = this.clock();
    if (now >= entry.resetAt) {
      this.#windows.delete(key);
      return 0;
    }
    return entry.failures >= this.limit ? Math.ceil((entry.resetAt - now) / 1000) : 0;
  }

  recordFailure(key: string): void {
    const now = this.clock();
    const entry = this.#windows.get(key);
    if (!entry || now >= entry.resetAt) {
      if (this.#windows.size > 100_000) this.#sweep(now);
      this.#windows.set(key, { failures: 1, resetAt: now + this.windowMs });
    } else {
      entry.failures += 1;
    }
  }

  #sweep(now: number): void {
    for (const [key, entry] of this.#windows) if (now >= entry.resetAt) this.#windows.delete(key);
  }
}
