/** Where a failed attempt came from, and which client id (or grant) it was for. */
export interface FailureSource {
  /** The caller's address, as the service sees it under TRUST_PROXY (src/http/client-address.ts). */
  address: string;
  /** The client id the attempt named, or the grant that names none (the console-link code exchange). */
  clientId: string;
}

export interface FailureLimits {
  /** Failures a minute (per window) for one client id from one address. */
  perClientAndAddress: number;
  /** Failures per window from one address, whatever client ids they named. */
  perAddress: number;
  windowMs: number;
}

/** The token endpoint's limits (docs/tokens.md): 10 guesses a minute per client and address, 100 per address. */
export const TOKEN_FAILURE_LIMITS: FailureLimits = { perClientAndAddress: 10, perAddress: 100, windowMs: 60_000 };

/**
 * Counts failed authentications in fixed windows, by source address and by (client id, source
 * address) pair, never by client id alone: client ids are not secret (RFC 6749 §2.2), so a
 * counter per client id would hand anyone who knows one a way to lock its owner out. A guesser
 * locks out its own address (and its own pair sooner), nobody else; a broken integration that
 * keeps sending a stale secret locks out that client at that address, not its neighbours behind
 * the same NAT. An IPv6 caller is counted by its /64, the block one host is usually given.
 * In memory and per process: with N API processes a guesser gets N times the limits, against 2^256.
 */
export class FailureLimiter {
  readonly #windows = new Map<string, { failures: number; resetAt: number }>();

  constructor(
    private readonly limits: FailureLimits,
    private readonly clock: () => number = Date.now,
  ) {}

  /** Seconds until the source may try again, or 0 when it may try now. */
  retryAfterSeconds(source: FailureSource): number {
    const [address, pair] = keysOf(source);
    return Math.max(this.#wait(address, this.limits.perAddress), this.#wait(pair, this.limits.perClientAndAddress));
  }

  recordFailure(source: FailureSource): void {
    for (const key of keysOf(source)) this.#count(key);
  }

  #wait(key: string, limit: number): number {
    const entry = this.#windows.get(key);
    if (!entry) return 0;
    const now = this.clock();
    if (now >= entry.resetAt) {
      this.#windows.delete(key);
      return 0;
    }
    return entry.failures >= limit ? Math.ceil((entry.resetAt - now) / 1000) : 0;
  }

  #count(key: string): void {
    const now = this.clock();
    const entry = this.#windows.get(key);
    if (!entry || now >= entry.resetAt) {
      if (this.#windows.size > 100_000) this.#sweep(now);
      this.#windows.set(key, { failures: 1, resetAt: now + this.limits.windowMs });
    } else {
      entry.failures += 1;
    }
  }

  #sweep(now: number): void {
    for (const [key, entry] of this.#windows) if (now >= entry.resetAt) this.#windows.delete(key);
  }
}

/** The address's counting unit: an IPv4 address, or the /64 of an IPv6 one. */
export function addressBlock(address: string): string {
  if (!address.includes(':')) return address;
  const [head = '', tail] = address.toLowerCase().split('%')[0]!.split('::') as [string, string | undefined];
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = tail === undefined ? left : [...left, ...Array<string>(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right];
  const prefix = groups.slice(0, 4);
  if (!prefix.every((group) => /^[0-9a-f]{1,4}$/.test(group))) return address;
  return `${prefix.map((group) => Number.parseInt(group, 16).toString(16)).join(':')}::/64`;
}

function keysOf(source: FailureSource): [string, string] {
  const address = addressBlock(source.address);
  return [`address:${address}`, `client:${source.clientId}@${address}`];
}
