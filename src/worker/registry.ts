import type { Deps } from '../deps.js';
import { combineOutcomeRecorders, type OutcomeRecorder } from '../domain/requests/outcomes.js';
import type { JobHandlers } from './job-handlers.js';
import { requestJobHandlers } from './request-jobs.js';
import { notificationJobHandlers } from './notifications/deliver-notification-job.js';
import { notificationRecorder } from './notifications/record-notifications.js';
import { listenCopyRecorder } from './notifications/listen-copies.js';

/**
 * Recorders called inside the transaction of every request state change that is notified
 * (registered, rejected, processed). The notification engine registers its factory here.
 */
export const OUTCOME_RECORDERS: Array<(deps: Deps) => OutcomeRecorder> = [notificationRecorder, listenCopyRecorder];

/** Job kinds beyond request registration and processing (e.g. `deliver-notification`). */
export const JOB_HANDLERS: Array<(deps: Deps) => JobHandlers> = [notificationJobHandlers];

export interface BuildHandlersOptions {
  /** Replaces the registered recorders (tests). */
  recordOutcome?: OutcomeRecorder;
}

/** Every handler the worker runs, built from the registries above. */
export function buildJobHandlers(deps: Deps, options: BuildHandlersOptions = {}): JobHandlers {
  const recordOutcome = options.recordOutcome ?? combineOutcomeRecorders(OUTCOME_RECORDERS.map((factory) => factory(deps)));
  const handlers: JobHandlers = { ...requestJobHandlers({ recordOutcome }) };
  for (const factory of JOB_HANDLERS) Object.assign(handlers, factory(deps));
  return handlers;
}
