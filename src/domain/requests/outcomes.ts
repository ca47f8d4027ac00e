import type { RewardRequest } from './request.js';
import { iso } from '../time.js';

export type { ProcessedRequestsPayload, RegisteredRequestsPayload } from '../notifications/payload-schemas.js';
import type { ProcessedRequestsPayload, RegisteredRequestsPayload } from '../notifications/payload-schemas.js';

/**
 * A state change that the notification engine reports. `registered` and `rejected` both become
 * `registered-requests`; `processed` becomes `processed-requests`. A `failed` request is never notified.
 * The worker hands them to its recorders (worker/outcome-recorder.ts).
 */
export type RequestOutcome =
  | { kind: 'registered'; request: RewardRequest; payload: RegisteredRequestsPayload }
  | { kind: 'rejected'; request: RewardRequest; payload: RegisteredRequestsPayload }
  | { kind: 'processed'; request: RewardRequest; payload: ProcessedRequestsPayload };

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
