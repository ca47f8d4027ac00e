/**
 * The durable job queue (docs/requests.md, "Job queue"): the jobs table, one file per operation,
 * for the transactional work (request registration and processing). A job is owned either by the
 * transaction that took it (`takeDueJobs`, the usual way) or by a written lease (`claimDueJobs`,
 * for the jobs of a failed batch, run one by one); every operation on an owned job checks that it
 * is still held and says what happened when it was not. Deliveries are not jobs: they are their
 * notification rows (storage/deliveries.ts). The wake-ups (JobSignals, LISTEN/NOTIFY) serve both.
 */
export { enqueueJobs, type NewJob } from './enqueue-jobs.js';
export { claimDueJobs } from './claim-due-jobs.js';
export { takeDueJobs } from './take-due-jobs.js';
export { completeHeldJobs } from './complete-held-jobs.js';
export { failHeldJob } from './fail-held-job.js';
export { LeaseLostError, newLease, retryDelayMs, TRANSACTION_LEASE, type ClaimedJob } from './job.js';
export { JobSignals } from './job-signals.js';
export { JOBS_CHANNEL, listenForJobs, notifyOtherProcesses } from './notify.js';
