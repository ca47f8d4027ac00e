/** Job kinds of the request pipeline: POST enqueues registration, registration enqueues processing. */
export const REGISTER_REQUEST_JOB = 'register-request';
export const PROCESS_REQUEST_JOB = 'process-request';

export interface RequestJobPayload {
  requestId: string;
  /**
   * With traces on, the W3C `traceparent` of the span that led to this job (the API call's for a
   * registration, the registration's for a processing): the job's span joins the request's trace.
   * Absent while traces are off (docs/deployment.md, "Traces").
   */
  traceParent?: string;
}

const payloadOf = (requestId: string, traceParent: string | undefined): RequestJobPayload => (traceParent === undefined ? { requestId } : { requestId, traceParent });

/** Attempts before a request job gives up and marks the request `failed` (11 waits of 1 s doubling to a 10-minute cap: about 27 minutes of retries). */
const REQUEST_JOB_MAX_ATTEMPTS = 12;

/** A request job as the queue's `enqueueJobs` takes it. */
export interface RequestJob {
  kind: typeof REGISTER_REQUEST_JOB | typeof PROCESS_REQUEST_JOB;
  payload: RequestJobPayload;
  maxAttempts: number;
}

export function registerRequestJob(requestId: string, traceParent?: string): RequestJob {
  return { kind: REGISTER_REQUEST_JOB, payload: payloadOf(requestId, traceParent), maxAttempts: REQUEST_JOB_MAX_ATTEMPTS };
}

export function processRequestJob(requestId: string, traceParent?: string): RequestJob {
  return { kind: PROCESS_REQUEST_JOB, payload: payloadOf(requestId, traceParent), maxAttempts: REQUEST_JOB_MAX_ATTEMPTS };
}
