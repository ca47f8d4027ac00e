import type { RequestOutcome } from '../domain/requests/outcomes.js';
import type { Tx } from '../storage/database.js';
import type { LeaseOffer } from '../storage/queue/index.js';

/**
 * THE NOTIFICATION HOOK. The worker calls it inside the transaction that changes the requests'
 * state, once per batch with every outcome of the batch, so whatever it writes (notification
 * rows, delivery jobs via enqueueJobs(tx, …)) commits or rolls back together with that change.
 * Throwing rolls the change back and retries the jobs. Jobs a recorder enqueues for this worker
 * are leased to it through `leaseTo` (the batch's offer).
 */
export type OutcomeRecorder = (tx: Tx, outcomes: RequestOutcome[], batch?: { leaseTo?: LeaseOffer | undefined }) => Promise<void>;

const recordNoOutcome: OutcomeRecorder = async () => {};

export function combineOutcomeRecorders(recorders: OutcomeRecorder[]): OutcomeRecorder {
  if (recorders.length === 0) return recordNoOutcome;
  if (recorders.length === 1) return recorders[0]!;
  return async (tx, outcomes, batch) => {
    for (const record of recorders) await record(tx, outcomes, batch);
  };
}
