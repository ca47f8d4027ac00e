import { combineOutcomeRecorders, type OutcomeRecorder } from './outcome-recorder.js';
import type { JobHandlers } from './job-handlers.js';
import { requestJobHandlers } from './request-jobs.js';
import type { NotificationDeliveryDeps } from './notifications/deliver-notification.js';
import { notificationRecorder, type OutcomeRecorderDeps } from './notifications/record-notifications.js';
import { listenCopyRecorder } from './notifications/listen-copies.js';

/** What the registered factories use: each declares its own interface, this is their union. */
export type HandlerDeps = OutcomeRecorderDeps & NotificationDeliveryDeps;

/**
 * Recorders called inside the transaction of every request state change that is notified
 * (registered, rejected, processed). The notification engine registers its factory here.
 */
const OUTCOME_RECORDERS: Array<(deps: HandlerDeps) => OutcomeRecorder> = [notificationRecorder, listenCopyRecorder];

/** Transactional job kinds beyond request registration and processing. */
const JOB_HANDLERS: Array<(deps: HandlerDeps) => JobHandlers> = [];

export interface BuildHandlersOptions {
  /** Replaces the registered recorders (tests). */
  recordOutcome?: OutcomeRecorder;
}

/** Every transactional handler the worker runs, built from the registries above. */
export function buildJobHandlers(deps: HandlerDeps, options: BuildHandlersOptions = {}): JobHandlers {
  const recordOutcome = options.recordOutcome ?? combineOutcomeRecorders(OUTCOME_RECORDERS.map((factory) => factory(deps)));
  const handlers: JobHandlers = { ...requestJobHandlers({ recordOutcome }) };
  for (const factory of JOB_HANDLERS) Object.assign(handlers, factory(deps));
  return handlers;
}
