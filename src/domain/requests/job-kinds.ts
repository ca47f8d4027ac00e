import type { NewJob } from '../../storage/queue/index.js';

/** Job kinds of the request pipeline: POST enqueues registration, registration enqueues processing. */
export const REGISTER_REQUEST_JOB = 'register-request';
export const PROCESS_REQUEST_JOB = 'process-request';

export interface RequestJobPayload {
  requestId: string;
}

/** Attempts before a request job gives up and marks the request `failed` (~17 min of retries). */
export const REQUEST_JOB_MAX_ATTEMPTS = 12;

export function registerRequestJob(requestId: string): NewJob {
  return { kind: REGISTER_REQUEST_JOB, payload: { requestId } satisfies RequestJobPayload, maxAttempts: REQUEST_JOB_MAX_ATTEMPTS };
}

export function processRequestJob(requestId: string): NewJob {
  return { kind: PROCESS_REQUEST_JOB, payload: { requestId } satisfies RequestJobPayload, maxAttempts: REQUEST_JOB_MAX_ATTEMPTS };
}
