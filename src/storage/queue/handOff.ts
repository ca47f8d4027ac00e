import type { Executor } from '../database.js';
import type { ClaimedJob } from './job.js';

/**
 * Enqueue and claim in one transaction. A worker whose transaction enqueues jobs it could run
 * itself right after the commit (the deliveries of the notifications a registration batch writes)
 * offers to take them: `enqueueJobs` in that transaction then inserts them already leased to the
 * worker, and the worker starts them when the transaction has committed, with no claim of its own.
 * That saves a claim (a write and a commit) and a turn of the delivery loop on the way from a
 * state change to its notification's arrival.
 *
 * Durability is the same as a claim's: the jobs exist exactly when the transaction commits, and
 * if the worker dies before finishing them they are due again when the lease ends, for any worker.
 */
export interface HandOff {
  /** Job kinds the worker runs outside transactions. */
  readonly kinds: ReadonlySet<string>;
  /** Lease token and its end, as a claim would write them. */
  readonly lease: string;
  readonly leaseUntil: number;
  /** How many more jobs the worker takes (its free slots); the rest are enqueued as usual. */
  room: number;
  /** Jobs taken, in enqueue order: the worker starts them after the commit. */
  readonly taken: ClaimedJob[];
  /** Jobs of these kinds, due now, enqueued but not taken (no room left): someone must claim them. */
  declined: number;
}

const offers = new WeakMap<object, HandOff>();

/** Call at the start of the transaction, with the transaction's executor. */
export function offerToTakeJobs(tx: Executor, offer: Pick<HandOff, 'kinds' | 'lease' | 'leaseUntil' | 'room'>): HandOff {
  const handOff: HandOff = { ...offer, taken: [], declined: 0 };
  offers.set(tx, handOff);
  return handOff;
}

/** The offer made for this transaction, if any (used by enqueueJobs). */
export function handOffOf(tx: Executor): HandOff | undefined {
  return tx.isTransaction ? offers.get(tx) : undefined;
}
