/**
 * The durable job queue (docs/requests.md, "Job queue"): the jobs table, one file per operation,
 * and the deliveries, which are their notification rows (delivery-rows.ts); the standalone loop
 * reaches either through one surface (standalone-queue.ts). A job is owned either by a written
 * lease (a claim, or a batch's hand-off with leaseTo) or by the transaction that took it
 * (takeDueJobs, jobs table only); every operation on an owned job checks that it is still held
 * and says what happened when it was not.
 */
export { enqueueJobs, leaseOffer, type EnqueueOptions, type LeaseOffer, type NewJob } from './enqueue-jobs.js';
export { claimDueJobs, newLease } from './claim-due-jobs.js';
export { takeDueJobs } from './take-due-jobs.js';
export { completeHeldJobs } from './complete-held-jobs.js';
export { failHeldJob } from './fail-held-job.js';
export { extendHeldLeases } from './extend-held-leases.js';
export { LeaseLostError, retryDelayMs, TRANSACTION_LEASE, type ClaimedJob } from './job.js';
export { JobSignals } from './job-signals.js';
export { DELIVERY_ROWS_QUEUE, DELIVERY_RUNS_WITHOUT_OUTCOME, JOBS_TABLE_QUEUE, type StandaloneQueue } from './standalone-queue.js';
export { claimDueDeliveries, DELIVERY_KIND, endHeldDeliveries, handedOff, leasedRow, postponeDeliveries, type DeliveryPayload } from './delivery-rows.js';
export { JOBS_CHANNEL, listenForJobs, notifyOtherProcesses } from './notify.js';
