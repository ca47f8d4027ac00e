import type { Delivery, HandOff } from '../storage/deliveries.js';

/**
 * Who owns a delivery (a pending notification row, storage/deliveries.ts), and what every other
 * writer may do to one. The rules, each kept by the statements of storage/deliveries.ts (the only
 * writer of a delivery's schedule and lease columns) and asserted below where this process could
 * break them:
 *
 * 1. **Run only under a written lease.** A worker runs a delivery only while its row carries a
 *    lease this process wrote — a token unique to one claim or one hand-off (`newLease`) and its
 *    end (`lease_until`) — taken in one of two writes and no other way:
 *    - a **claim** (`claimDeliveries`), of due rows: pending, `run_at` reached, and no lease or an
 *      ended one;
 *    - a **hand-off** (`applyHandOff`): the batch that writes the notification inserts it leased
 *      to its worker, in the transaction that makes it.
 *    A **listen copy** is never due (`run_at` null), so no claim takes it: its session's poll
 *    leases it (`leaseListenCopies`) and the CLI's reported result settles it under that lease.
 *    `assertClaimed` checks what a claim returned.
 * 2. **Taken back only after its end.** No claim takes a row before `lease_until`. The holder
 *    renews every lease/3 while it runs (`renewLeases`), so only a dead or stalled process's
 *    deliveries are taken over; their run counts (`runs`), and after RUNS_WITHOUT_OUTCOME runs
 *    without an outcome the delivery fails.
 * 3. **One run per process.** A process never runs a delivery twice at once, even when a renewal
 *    came too late and the lease ended while it still ran: its claims leave out what it runs
 *    whose lease may have ended (`lapsedBy`), and a hand-off whose lease ended before the batch
 *    committed is not started (`adoptable`): a claim may have taken it, and if not the next one
 *    will. A claim can still return a delivery whose run here has written its outcome (a retry
 *    due at once) and not yet ended: the new run starts when the old one ends (`ended`). `hold`
 *    asserts it.
 * 4. **A late settle is no write.** Everything the holder writes — the settle, letting go, a
 *    failed run, a postponement, a renewal — is conditional on its token (`lease = held lease`).
 *    A holder whose lease was taken over writes nothing: its call was made, but the attempt is not
 *    recorded, and the new holder calls again with the same `webhook-id` (at-least-once; receivers
 *    drop duplicates by it).
 * 5. **Others leave a delivery in flight alone.** The writes that are not a holder's — a manual
 *    retry, a recovery, the release of a rate limit or of a held notification, a switch-off — never
 *    touch a row under a lease that has not ended. A **switch-off** fails the subscription's
 *    pending deliveries but leaves one in flight to its holder: its settle is written, and its next
 *    attempt, if any, is refused (the subscription is inactive) and ends it. One whose lease has
 *    ended is failed with the rest and its lease cleared, so its old holder's late settle writes
 *    nothing over the switch-off (rule 4).
 */
export class HeldDeliveries {
  readonly #held = new Map<string, { delivery: Delivery; ended: Promise<void>; end: () => void }>();

  get size(): number {
    return this.#held.size;
  }

  /** This process starts running `delivery` under the lease it just acquired (rule 3: not one it runs already). */
  hold(delivery: Delivery): void {
    if (this.#held.has(delivery.id)) throw new Error(`delivery ownership: ${delivery.id} is already running in this process (rule 3)`);
    let end!: () => void;
    const ended = new Promise<void>((resolve) => (end = resolve));
    this.#held.set(delivery.id, { delivery, ended, end });
  }

  /** Its run is over (settled, lost or failed): a later claim may take it again. */
  release(delivery: Delivery): void {
    const entry = this.#held.get(delivery.id);
    if (entry?.delivery !== delivery) return;
    this.#held.delete(delivery.id);
    entry.end();
  }

  /** When the run here of delivery `id` ends; undefined when none runs. */
  ended(id: string): Promise<void> | undefined {
    return this.#held.get(id)?.ended;
  }

  /** What the heartbeat renews. */
  all(): Delivery[] {
    return [...this.#held.values()].map((entry) => entry.delivery);
  }

  /**
   * The deliveries running here whose lease may have ended by `now`: a claim due at `now` must
   * leave them out (rule 3). The lease ends as this process last knows them; a renewal committed
   * but not yet known only makes the list longer than needed.
   */
  lapsedBy(now: number): string[] {
    const ids: string[] = [];
    for (const { delivery } of this.#held.values()) if (delivery.leaseUntil <= now) ids.push(delivery.id);
    return ids;
  }
}

/**
 * The deliveries of a committed hand-off this process may start: those whose lease has not ended
 * by `now` (rule 3). One whose lease ended is a claim's to take, perhaps already taken.
 */
export function adoptable(offer: HandOff, now: number): { start: Delivery[]; lapsed: Delivery[] } {
  if (now < offer.lease.until) return { start: [...offer.taken], lapsed: [] };
  return { start: [], lapsed: [...offer.taken] };
}

/** Rules 1 to 3 on what a claim at `now` returned: each under the claim's one new lease, not ended, and none it was told to leave out. */
export function assertClaimed(deliveries: readonly Delivery[], now: number, leftOut: readonly string[]): void {
  const lease = deliveries[0]?.lease;
  const excluded = new Set(leftOut);
  for (const delivery of deliveries) {
    if (delivery.lease !== lease) throw new Error(`delivery ownership: one claim returned two leases (${lease}, ${delivery.lease}) (rule 1)`);
    if (delivery.leaseUntil <= now) throw new Error(`delivery ownership: ${delivery.id} was claimed under a lease that had ended (rule 2)`);
    if (excluded.has(delivery.id)) throw new Error(`delivery ownership: ${delivery.id} was claimed while its run here may go on (rule 3)`);
  }
}
