import type { Tx } from '../../storage/database.js';
import type { LeaseOffer } from '../../storage/queue/index.js';
import type { RewardRequest } from './request.js';
import { iso } from '../time.js';

export type { ProcessedRequestsPayload, RegisteredRequestsPayload } from '../notifications/payload-schemas.js';
import type { ProcessedRequestsPayload, RegisteredRequestsPayload } from '../notifications/payload-schemas.js';

/**
 * A state change that the notification engine reports. `registered` and `rejected` both become
 * `registered-requests`; `processed` becomes `processed-requests`. A `failed` request is never notified.
 */
export type RequestOutcome =
  | { kind: 'registered'; request: RewardRequest; payload: RegisteredRequestsPayload }
  | { kind: 'rejected'; request: RewardRequest; payload: RegisteredRequestsPayload }
  | { kind: 'processed'; request: RewardRequest; payload: ProcessedRequestsPayload };

/**
 * THE NOTIFICATION HOOK. The worker calls it inside the transaction that changes the requests'
 * state, once per batch with every outcome of the batch, so whatever it writes (notification
 * rows, delivery jobs via enqueueJobs(tx, …)) commits or rolls back together with that change.
 * Throwing rolls the change back and retries the jobs.
 */
/** Jobs a recorder enqueues for this worker are leased to it through `leaseTo` (the batch's offer). */
export type OutcomeRecorder = (tx: Tx, outcomes: RequestOutcome[], batch?: { leaseTo?: LeaseOffer | undefined }) => Promise<void>;

export const recordNoOutcome: OutcomeRecorder = async () => {};

export function combineOutcomeRecorders(recorders: OutcomeRecorder[]): OutcomeRecorder {
  if (recorders.length === 0) return recordNoOutcome;
  if (recorders.length === 1) return recorders[0]!;
  return async (tx, outcomes, batch) => {
    for (const record of recorders) await record(tx, outcomes, batch);
  };
}

export function registeredPayload(request: RewardRequest): RegisteredRequestsPayload {
  return {
    id: request.id,
    ...(request.rewardValue !== null && request.rewardValue > 0 ? { rewardValue: request.rewardValue } : {}),
    ...(request.errorCode !== null ? { errorCode: request.errorCode } : {}),
    ...(request.message !== null ? { message: request.message } : {}),
  };
}

export function processedPayload(request: RewardRequest): ProcessedRequestsPayload {
  return {
    id: request.id,
    ...(request.rewardValue !== null && request.rewardValue > 0 ? { rewardValue: request.rewardValue } : {}),
    concluded: iso(request.concludedAt ?? request.updatedAt),
    delivered: request.delivered ?? [],
    canceled: request.canceled ?? [],
  };
}
