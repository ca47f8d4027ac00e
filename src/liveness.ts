export type LivenessState = { live: true } | { live: false; reason: string };

/**
 * `/health/live`: whether this process still makes progress, not merely answers. Every wait on the
 * database is bounded (storage/postgres-pool.ts), so a worker loop's step or an ingest commit
 * ends within seconds even while the database is away; one that has run longer than
 * LIVENESS_TIMEOUT is stuck in this process (a bug, an awaited promise that never settles), and
 * only a restart brings it back. A database that does not answer is readiness's to report, not
 * liveness's: restarting every process during a database outage would only add their starts to it.
 * Each watched part says when the work it has in progress began (undefined while it has none).
 */
export class Liveness {
  readonly #watched = new Map<string, () => number | undefined>();

  constructor(
    private readonly timeoutMs: number,
    private readonly clock: () => number = Date.now,
  ) {}

  /** Watches `name`; returns the function that stops watching it. */
  watch(name: string, busySince: () => number | undefined): () => void {
    this.#watched.set(name, busySince);
    return () => this.#watched.delete(name);
  }

  check(): LivenessState {
    const now = this.clock();
    for (const [name, busySince] of this.#watched) {
      const since = busySince();
      if (since !== undefined && now - since > this.timeoutMs) {
        return { live: false, reason: `${name} has been at one step for ${Math.round((now - since) / 1000)} s, past LIVENESS_TIMEOUT (${Math.round(this.timeoutMs / 1000)} s)` };
      }
    }
    return { live: true };
  }
}
