import type { ClaimedJob, LeaseOffer } from '../storage/queue/index.js';

/**
 * Who owns a delivery, and the one way this process comes to run one. The rules, each checked
 * where it applies (the storage statements in `storage/queue/`, the bookkeeping below):
 *
 * 1. **Only under a written lease.** A delivery runs only while its row carries a lease this
 *    process wrote: a token unique to one claim or one hand-off (`newLease`) and an end, kept in
 *    `run_at` while leased. It is acquired in one of two writes, and no other way:
 *    - a **claim** (`claimDueJobs`), which takes due rows: never leased, or leased and past the
 *      lease's end;
 *    - a **hand-off**: a batch inserts the delivery already leased to this process (`leaseOffer`,
 *      `enqueueJobs` with `leaseTo`), in the transaction that makes it.
 * 2. **Taken back only after its end.** No claim takes a row before `run_at`. The holder renews
 *    while it runs (the heartbeat, `extendHeldLeases`), so that only a dead or stalled process's
 *    deliveries are taken over.
 * 3. **One run per process.** A process never runs a delivery twice at once, even when a renewal
 *    came too late and the lease ended while it was still running: its claims leave out what it
 *    runs whose lease may have ended (`lapsedBy`), and a hand-off whose lease ended before the
 *    batch committed is not started (`adoptable`): a claim may already have taken it, and if not
 *    the next claim will. A claim can still return a delivery whose run here has written its
 *    outcome (a retry due at once, a postponement to now) and not yet ended: the database shows
 *    that write to the claim's connection before its commit reaches this process. The new run
 *    starts when the old one ends (`ended`). `hold` asserts it.
 * 4. **A late write is no write.** Everything the holder writes (the outcome, a retry, a
 *    postponement, a renewal) is conditional on its token (`where locked_by = lease`). A holder
 *    whose lease was taken over writes nothing: its call was made, but the attempt is not recorded
 *    and the new holder calls again with the same webhook-id (at-least-once; receivers drop
 *    duplicates by it). A lease token never changes in memory once acquired.
 */
export class HeldDeliveries {
  readonly #held = new Map<string, { job: ClaimedJob; ended: Promise<void>; end: () => void }>();

  get size(): number {
    return this.#held.size;
  }

  /** This process starts running `job` under the lease it just acquired (rule 3: not one it runs already). */
  hold(job: ClaimedJob): void {
    if (this.#held.has(job.id)) throw new Error(`delivery ownership: job ${job.id} is already running in this process (rule 3)`);
    let end!: () => void;
    const ended = new Promise<void>((resolve) => (end = resolve));
    this.#held.set(job.id, { job, ended, end });
  }

  /** Its run is over (settled, lost or failed): a later claim may take it again. */
  release(job: ClaimedJob): void {
    const entry = this.#held.get(job.id);
    if (entry?.job !== job) return;
    this.#held.delete(job.id);
    entry.end();
  }

  /** When the run here of delivery `id` ends; undefined when none runs. */
  ended(id: string): Promise<void> | undefined {
    return this.#held.get(id)?.ended;
  }

  has(id: string): boolean {
    return this.#held.has(id);
  }

  /** What the heartbeat renews. */
  all(): ClaimedJob[] {
    return [...this.#held.values()].map((entry) => entry.job);
  }

  /**
   * The deliveries running here whose lease may have ended by `now`: a claim due at `now` must
   * leave them out (rule 3). The lease ends as this process last knows them; a renewal committed
   * but not yet known only makes the list longer than needed.
   */
  lapsedBy(now: number): string[] {
    const ids: string[] = [];
    for (const { job } of this.#held.values()) if (job.leaseUntil <= now) ids.push(job.id);
    return ids;
  }
}

/**
 * The jobs of a committed hand-off this process may start: those whose lease has not ended by
 * `now` (rule 3). A job whose lease ended is a claim's to take, perhaps already taken.
 */
export function adoptable(offer: LeaseOffer, now: number): { start: ClaimedJob[]; lapsed: ClaimedJob[] } {
  if (now < offer.lease.until) return { start: [...offer.taken], lapsed: [] };
  return { start: [], lapsed: [...offer.taken] };
}
