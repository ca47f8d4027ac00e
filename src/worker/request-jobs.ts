import { allocateStock } from '../domain/requests/allocation.js';
import { randomDeliveryCodes } from '../domain/requests/delivery-codes.js';
import { REQUEST_ERROR_CODES } from '../domain/requests/error-codes.js';
import { buildProcessingResult } from '../domain/requests/items.js';
import { PROCESS_REQUEST_JOB, processRequestJob, REGISTER_REQUEST_JOB, type RequestJobPayload } from '../domain/requests/job-kinds.js';
import { processedPayload, registeredPayload, type RequestOutcome } from '../domain/requests/outcomes.js';
import type { OutcomeRecorder } from './outcome-recorder.js';
import { decideRegistration, type ExperienceSnapshot, type RegistrationDecision } from '../domain/requests/registration.js';
import type { RewardRequest } from '../domain/requests/request.js';
import type { Tx } from '../storage/database.js';
import { enqueueJobs, type ClaimedJob } from '../storage/queue/index.js';
import type { Experience } from '../domain/experiences/experience.js';
import { findExperienceByName } from '../storage/repositories/experiences.js';
import { lockPrizeStock, takePrizeUnits } from '../storage/repositories/prize-stock.js';
import { recordRequestEvents, type NewRequestEvent } from '../storage/repositories/request-events.js';
import {
  changeRequestsStatus,
  changeRequestStatus,
  experienceSnapshotOf,
  failedChange,
  findRequestRows,
  markRequestsProcessed,
  registeredChange,
  rejectedChange,
  toRewardRequest,
  type RequestRowForWork,
} from '../storage/repositories/requests.js';
import type { RequestsTable } from '../storage/tables/index.js';
import type { BatchContext, JobContext, JobHandlers } from './job-handlers.js';
import type { BatchTrace } from './batch-trace.js';

// Both handlers work per batch with a fixed number of statements (one status UPDATE per decision
// group, one multi-row insert each for events and jobs). Statement by statement, the worker fell
// far behind ingest on SQLite; batched it keeps up (`npm run bench -- --only ingest`).

const requestIdOf = (job: ClaimedJob) => (job.payload as RequestJobPayload).requestId;

/**
 * Traces on: a span for each job of the batch, in its request's trace (the `traceparent` its job
 * carries). Its outcome is set as the batch decides it; a job whose request was already past this
 * step has none.
 */
function traceJobs(trace: BatchTrace, name: string, jobs: ClaimedJob[]): void {
  for (const job of jobs) {
    const { requestId, traceParent } = job.payload as RequestJobPayload;
    trace.start(requestId, name, traceParent, { 'rewards.request.id': requestId, 'rewards.job.attempt': job.attempts + 1, 'rewards.batch.size': jobs.length });
  }
}

/**
 * Requests of the batch still in `status` (a duplicate or stale job completes without effect),
 * with their account's state read in this transaction: work done after a deactivation committed
 * sees it.
 */
async function rowsInStatus(tx: Tx, jobs: ClaimedJob[], status: RequestsTable['status']): Promise<RequestRowForWork[]> {
  const rows = await findRequestRows(tx, jobs.map(requestIdOf));
  const unique = new Map([...rows.values()].filter((row) => row.status === status).map((row) => [row.id, row]));
  return [...unique.values()];
}

/** Only an account deactivated by an operator stops its requests (one that was never stored is none of this). */
const isAccountActive = (row: RequestRowForWork) => row.account_active === null || Number(row.account_active) !== 0;

/** Registration: decide each request, then one status change per group of identical decisions. */
async function registerRequests(tx: Tx, jobs: ClaimedJob[], ctx: JobContext, batch: BatchContext, recordOutcome: OutcomeRecorder): Promise<void> {
  const now = ctx.clock();
  const trace = batch.trace;
  if (trace) traceJobs(trace, 'register request', jobs);
  const experiences = new Map<string, Experience | undefined>();
  const groups = new Map<string, { decision: RegistrationDecision; rows: RequestsTable[] }>();
  for (const row of await rowsInStatus(tx, jobs, 'received')) {
    const cacheKey = `${row.account_id}\u0000${row.experience}`;
    if (!experiences.has(cacheKey)) experiences.set(cacheKey, await findExperienceByName(tx, row.account_id, row.experience));
    const decision = decideRegistration({
      accountActive: isAccountActive(row),
      experienceName: row.experience,
      experience: experiences.get(cacheKey),
      event: row.event,
      data: row.data === null ? undefined : (JSON.parse(row.data) as unknown),
    });
    const groupKey = decision.outcome === 'registered' ? `ok\u0000${decision.snapshot.id}` : `no\u0000${decision.errorCode}\u0000${decision.message}`;
    const group = groups.get(groupKey) ?? { decision, rows: [] };
    group.rows.push(row);
    groups.set(groupKey, group);
  }

  const events: NewRequestEvent[] = [];
  const outcomes: RequestOutcome[] = [];
  const followUps = [];
  for (const { decision, rows } of groups.values()) {
    const change =
      decision.outcome === 'registered'
        ? registeredChange({ rewardValue: decision.rewardValue, snapshot: decision.snapshot, now })
        : rejectedChange({ errorCode: decision.errorCode, message: decision.message, now });
    const changed = await changeRequestsStatus(
      tx,
      rows.map((row) => row.id),
      ['received'],
      change,
    );
    for (const row of rows.filter((r) => changed.has(r.id))) {
      const request = toRewardRequest({ ...row, ...change });
      trace?.setAttributes(row.id, { 'rewards.request.outcome': decision.outcome });
      if (decision.outcome === 'registered') {
        events.push({ requestId: row.id, name: 'pedido-registrado', refId: row.id, experience: row.experience });
        // Traces on: processing's span is the child of this registration's.
        followUps.push(processRequestJob(row.id, trace?.traceParentOf(row.id)));
        outcomes.push({ kind: 'registered', request, payload: registeredPayload(request) });
      } else {
        const data = { errorCode: decision.errorCode, message: decision.message };
        events.push({ requestId: row.id, name: 'pedido-recusado', refId: row.id, experience: row.experience, data });
        outcomes.push({ kind: 'rejected', request, payload: registeredPayload(request) });
      }
    }
  }
  await recordOutcome(tx, outcomes, batch);
  await recordRequestEvents(tx, events, now);
  // This worker takes the next batch right after this one: no wake-up needed for the follow-ups.
  await enqueueJobs(tx, followUps, { now });
}

/**
 * Processing: allocate stock for the whole batch, take it, build items, mark processed. A request
 * of an account deactivated since its registration takes no stock: every prize is canceled
 * (ACCOUNT_INACTIVE), so nothing is handed out against the operator's cut.
 */
async function processRequests(tx: Tx, jobs: ClaimedJob[], ctx: JobContext, batch: BatchContext, recordOutcome: OutcomeRecorder): Promise<void> {
  const now = ctx.clock();
  const trace = batch.trace;
  if (trace) traceJobs(trace, 'process request', jobs);
  const rows = await rowsInStatus(tx, jobs, 'registered');
  if (rows.length === 0) return;
  const snapshots = rows.map((row) => experienceSnapshotOf(row) as ExperienceSnapshot);
  const active = rows.map(isAccountActive);
  const stock = await lockPrizeStock(
    tx,
    snapshots.filter((_, i) => active[i]).map((snapshot) => snapshot.id),
  );
  const { allocations, taken } = allocateStock(snapshots, stock, active);
  // Sorted keys: PostgreSQL batches touch prize rows in one global order and cannot deadlock.
  for (const [key, units] of [...taken].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const [experienceId, prizeId] = key.split('\u0000') as [string, string];
    if (!(await takePrizeUnits(tx, experienceId, prizeId, units))) throw new Error(`stock of prize ${prizeId} changed during allocation; retrying`);
  }
  const results = rows.map((row, i) =>
    buildProcessingResult({ requestId: row.id, event: row.event, experience: snapshots[i]!, allocations: allocations[i]!, concludedAt: now, codes: randomDeliveryCodes }),
  );
  const changed = await markRequestsProcessed(
    tx,
    rows.map((row, i) => ({ id: row.id, ...results[i]! })),
    now,
  );
  // Stock was taken for every row: all of them must change, or the whole batch rolls back.
  if (changed.size !== rows.length) throw new Error('a request changed status during processing; retrying');

  const events: NewRequestEvent[] = [];
  const outcomes: RequestOutcome[] = [];
  for (const [i, row] of rows.entries()) {
    const result = results[i]!;
    const request: RewardRequest = {
      ...toRewardRequest(row),
      status: 'processed',
      delivered: result.delivered,
      canceled: result.canceled,
      rewardValue: result.rewardValue ?? null,
      concludedAt: now,
      updatedAt: now,
    };
    trace?.setAttributes(row.id, { 'rewards.request.outcome': 'processed' });
    events.push({ requestId: row.id, name: 'pedido-processado', refId: row.id, experience: row.experience });
    for (const delivery of result.digitalDeliveries) {
      events.push({ requestId: row.id, name: 'pedido-entregue', refId: delivery.refId, experience: row.experience, data: { rewardId: delivery.prize.id, bucket: delivery.prize.bucket } });
    }
    outcomes.push({ kind: 'processed', request, payload: processedPayload(request) });
  }
  await recordOutcome(tx, outcomes, batch);
  await recordRequestEvents(tx, events, now);
}

/** After the last attempt an internal error ends the request as `failed`; it is never notified. */
function markFailed(from: 'received' | 'registered', errorCode: 'REGISTRATION_FAILED' | 'PROCESSING_FAILED') {
  return async (tx: Tx, job: ClaimedJob, _error: unknown, ctx: JobContext) => {
    await changeRequestStatus(tx, requestIdOf(job), [from], failedChange({ errorCode, message: REQUEST_ERROR_CODES[errorCode], now: ctx.clock() }));
  };
}

export function requestJobHandlers(options: { recordOutcome: OutcomeRecorder }): JobHandlers {
  return {
    [REGISTER_REQUEST_JOB]: {
      handle: (tx, jobs, ctx, batch) => registerRequests(tx, jobs, ctx, batch, options.recordOutcome),
      onExhausted: markFailed('received', 'REGISTRATION_FAILED'),
    },
    [PROCESS_REQUEST_JOB]: {
      handle: (tx, jobs, ctx, batch) => processRequests(tx, jobs, ctx, batch, options.recordOutcome),
      onExhausted: markFailed('registered', 'PROCESSING_FAILED'),
    },
  };
}
