/** The durable job queue: one file per operation (see docs/requests.md, "Job queue"). */
export { claimDueJobs, newLease, type ClaimOptions } from './claimDueJobs.js';
export { completeJob, completeJobs } from './completeJob.js';
export { completeHeldJobs } from './completeHeldJobs.js';
export { enqueueJob, enqueueJobs, type EnqueueOptions, type NewJob } from './enqueueJob.js';
export { extendJobLease, extendJobLeases } from './extendJobLease.js';
export { failJob, type FailOptions } from './failJob.js';
export { handOffOf, offerToTakeJobs, type HandOff } from './handOff.js';
export { LeaseLostError, retryDelayMs, type ClaimedJob, type Job } from './job.js';
export { lockClaimedJobs } from './lockClaimedJobs.js';
export { completeLockedJobs, lockDueJobs, TRANSACTION_LEASE } from './lockDueJobs.js';
export { releaseJobs } from './releaseJobs.js';
export { JOBS_CHANNEL, listenForJobs, notifyOtherProcesses, onJobsEnqueued, signalJobsEnqueued } from './wakeups.js';
