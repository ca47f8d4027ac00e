/**
 * The durable job queue, one file per operation (docs/requests.md, "Job queue"). A job is owned
 * either by a written lease (claimDueJobs, or enqueueJobs with leaseTo) or by the transaction
 * that took it (takeDueJobs); every operation on an owned job checks that it is still held and
 * says what happened when it was not.
 */
export { enqueueJobs, leaseOffer, type EnqueueOptions, type LeaseOffer, type NewJob } from './enqueue-jobs.js';
export { claimDueJobs, newLease, type ClaimOptions } from './claim-due-jobs.js';
export { takeDueJobs } from './take-due-jobs.js';
export { completeHeldJobs } from './complete-held-jobs.js';
export { failHeldJob, type FailOptions } from './fail-held-job.js';
export { postponeHeldJobs, type Postponement } from './postpone-held-jobs.js';
export { extendHeldLeases } from './extend-held-leases.js';
export { LeaseLostError, retryDelayMs, TRANSACTION_LEASE, type ClaimedJob, type Job, type Lease } from './job.js';
export { JobSignals, type JobsEnqueuedListener } from './job-signals.js';
export { JOBS_CHANNEL, listenForJobs, notifyOtherProcesses } from './notify.js';
