import type { RequestOutcome } from '../domain/requests/outcomes.js';
import type { Tx } from '../storage/database.js';
import type { HandOff } from '../storage/deliveries.js';
import type { BatchTrace } from './batch-trace.js';

/**
 * THE NOTIFICATION HOOK. The worker calls it inside the transaction that changes the requests'
 * state, once per batch with every outcome of the batch, so whatever it writes (notification
 * rows, each its own delivery) commits or rolls back together with that change. Throwing rolls
 * the change back and retries the jobs. The deliveries due now that the batch's worker has room
 * for are leased to it through `handOff` (storage/deliveries.ts). With traces on, `trace` gives
 * each request's span, the parent of what is written for it.
 */
export type OutcomeRecorder = (tx: Tx, outcomes: RequestOutcome[], batch?: { handOff?: HandOff | undefined; trace?: Pick<BatchTrace, 'traceParentOf'> | undefined }) => Promise<void>;

const recordNoOutcome: OutcomeRecorder = async () => {};

export function combineOutcomeRecorders(recorders: OutcomeRecorder[]): OutcomeRecorder {
  if (recorders.length === 0) return recordNoOutcome;
  if (recorders.length === 1) return recorders[0]!;
  return async (tx, outcomes, batch) => {
    for (const record of recorders) await record(tx, outcomes, batch);
  };
}
