import { Batcher } from '../../batcher.js';
import { isDatabaseUnavailable } from '../../storage/database-errors.js';
import { whileLeaseHolds } from '../while-lease-holds.js';
import type { Db } from '../../storage/database.js';
import { lightTransaction } from '../../storage/light-transaction.js';
import { releaseWaitingFor, type Delivery } from '../../storage/deliveries.js';
import { recordAttempts, type NotificationAttemptRow } from '../../storage/repositories/notifications.js';
import type { NotificationStatus } from '../../domain/notifications/notification.js';
import type { NotificationsTable } from '../../storage/tables/index.js';
import { recordEndpointHealth, type DisabledSubscription } from '../../services/endpoint-health.js';
import { reportsFailure, writeOperationalNotifications, type FailedNotification } from '../../services/operational-notifications.js';
import { recordCircuitAttempts, type CircuitChangeFact } from '../../services/circuit-breakers.js';
import { DEFAULT_CIRCUIT_SETTINGS, type CircuitSettings } from '../../domain/notifications/circuit-breaker.js';

export interface AttemptSettlement {
  /** The delivery the attempt was made for, held under its lease. */
  delivery: Delivery;
  accountId: string;
  attempt: NotificationAttemptRow;
  status: NotificationStatus;
  nextAttemptAt: number | null;
  now: number;
  /** The subscription whose endpoint health the attempt counts toward; null for test sends, refusals and request URLs. */
  countsFor: string | null;
  /** The endpoint whose circuit breaker the attempt counts toward (the notification's URL); null when no call was made (a refusal). */
  endpointUrl: string | null;
  /** What the notification is: one that ends failed is told to the account (`failed-notifications`) unless it is a test send or operational itself. */
  notification: { event: NotificationsTable['event']; requestId: string; test: boolean };
}

export interface AttemptLogOptions {
  maxBatch?: number;
  onLeaseLost?: () => void;
  /** SUBSCRIPTION_DISABLE_AFTER in ms (0 = never). */
  disableAfterMs?: number;
  /** After the commit that switched a subscription off. */
  onDisabled?: (disabled: DisabledSubscription) => void;
  /** The circuit breaker's rules (CIRCUIT_BREAKER_*). */
  circuits?: CircuitSettings;
  /** After the commit that opened or closed an endpoint's circuit. */
  onCircuitChanged?: (change: CircuitChangeFact) => void;
  /** After a commit that wrote operational notifications (new deliveries): wakes this process's worker. */
  onEnqueued?: () => void;
  /** An attempt could not be written because the database cannot serve; it is written again after `waitMs`. */
  onRetry?: (error: unknown, waitMs: number) => void;
}

interface Written {
  held: Set<string>;
  disabled: DisabledSubscription[];
  circuits: CircuitChangeFact[];
  /** Operational notifications written. */
  enqueued: number;
}

/** What an attempt's log says when its answer could not be stored as received. */
export const ANSWER_NOT_STORED = 'the answer could not be stored; the attempt is logged without it';

/**
 * Group commit of finished attempts (a Batcher, 5 ms of gathering). Each attempt must log itself
 * and move its notification on (its outcome, or its next attempt's time), atomically and under the
 * lease its delivery ran under. One transaction per attempt cost an fsync per delivery on SQLite
 * and capped delivery far below the calls' rate; attempts finishing together now share one
 * transaction. A commit blocks the event loop (SQLite), so nothing joins a batch while
 * one is written: the 5 ms let the attempts finishing meanwhile share the next commit. It delays
 * only the bookkeeping, not the call to the receiver.
 * An attempt whose lease was lost (another worker took the delivery over) is left out, not recorded.
 *
 * A call whose attempt is not recorded is made again (its delivery runs again), so one attempt the
 * database refuses must not take the others of its commit down with it: a failed group is written
 * again one attempt at a time, and an attempt refused on its own is written once more without the
 * receiver's answer, its Retry-After and the error text (the parts of an attempt that come from
 * outside). Only what still fails then (the database unreachable, the notification gone) is left
 * to the delivery's next run.
 */
export class AttemptLogWriter {
  readonly #batcher: Batcher<AttemptSettlement, boolean>;

  constructor(
    private readonly db: Db,
    private readonly options: AttemptLogOptions = {},
  ) {
    this.#batcher = new Batcher({ gather: 5, maxBatch: options.maxBatch ?? 256, isolateFailures: (error) => !isDatabaseUnavailable(error), run: (settlements) => this.#record(settlements) });
  }

  /**
   * Resolves true once committed, false when the delivery's lease was lost meanwhile. While the
   * database cannot serve, the attempt is written again for as long as the lease holds
   * (whileLeaseHolds): a call made just before a failover is recorded once the new primary
   * answers, not made again a lease later.
   */
  settle(settlement: AttemptSettlement): Promise<boolean> {
    return whileLeaseHolds(settlement.delivery, () => this.#batcher.submit(settlement), this.options.onRetry);
  }

  async #record(settlements: AttemptSettlement[]): Promise<boolean[]> {
    let written: Written;
    try {
      written = await this.#write(settlements);
    } catch (error) {
      if (settlements.length > 1 || isDatabaseUnavailable(error)) throw error;
      const [settlement] = settlements as [AttemptSettlement];
      const withoutAnswer = { ...settlement, attempt: { ...settlement.attempt, response_body: null, retry_after: null, error: ANSWER_NOT_STORED } };
      written = await this.#write([withoutAnswer]).catch(() => {
        throw error;
      });
    }
    for (const disabled of written.disabled) this.options.onDisabled?.(disabled);
    for (const change of written.circuits) this.options.onCircuitChanged?.(change);
    if (written.enqueued > 0) this.options.onEnqueued?.();
    return settlements.map((settlement) => {
      const recorded = written.held.has(settlement.delivery.id);
      if (!recorded) this.options.onLeaseLost?.();
      return recorded;
    });
  }

  /**
   * One transaction: settles the deliveries still held (their outcome, their next attempt's time,
   * their lease let go) and logs their attempts, releases what was held behind the ones that
   * ended, and adds the attempts to their subscriptions' health rollup (last: its rows are the ones
   * other writers may wait for, so they are held for the commit only). Returns the held ids.
   * When a notification ended failed here, a subscription was switched off or a circuit opened or closed, the account's
   * operational notifications are written in the same transaction (writeOperationalNotifications):
   * a batch where none of these happened runs no statement for them.
   */
  #write(settlements: AttemptSettlement[]): Promise<Written> {
    return lightTransaction(this.db, async (tx) => {
      // One time for the whole group commit, so that the same outcome is one UPDATE.
      const now = Math.max(...settlements.map((settlement) => settlement.now));
      const { settled, waitedFor } = await recordAttempts(
        tx,
        settlements.map(({ delivery, attempt, status, nextAttemptAt }) => ({ attempt, lease: delivery.lease, status, nextAttemptAt, now })),
      );
      const recorded = settlements.filter((settlement) => settled.has(settlement.delivery.id));
      // Notifications held behind the ones that ended here go out now (docs/delivery.md, "Order");
      // only ended ones flagged `has_waiters` can have any, so usually there is no statement to run.
      const ended = recorded.flatMap((settlement) => (settlement.status !== 'pending' && waitedFor.has(settlement.attempt.notification_id) ? [settlement.attempt.notification_id] : []));
      await releaseWaitingFor(tx, ended, now);
      const counted = recorded.flatMap(({ attempt, countsFor }) =>
        countsFor === null
          ? []
          : [{ subscriptionId: countsFor, at: attempt.started_at, outcome: attempt.outcome, latencyMs: attempt.latency_ms, statusCode: attempt.status_code, error: attempt.error }],
      );
      const disabled = await recordEndpointHealth(tx, counted, { now, disableAfterMs: this.options.disableAfterMs ?? 0 });
      const circuits = await recordCircuitAttempts(
        tx,
        recorded.flatMap(({ accountId, attempt, endpointUrl }) =>
          endpointUrl === null ? [] : [{ accountId, url: endpointUrl, notificationId: attempt.notification_id, startedAt: attempt.started_at, statusCode: attempt.status_code, error: attempt.error }],
        ),
        this.options.circuits ?? DEFAULT_CIRCUIT_SETTINGS,
        now,
      );
      // Not the pending notifications a switch-off failed: its disabled-subscriptions notification counts them.
      const failed = recorded.flatMap(({ status, accountId, attempt, notification }): FailedNotification[] =>
        status === 'failed' && reportsFailure(notification)
          ? [
              {
                accountId,
                notificationId: attempt.notification_id,
                requestId: notification.requestId,
                event: notification.event,
                url: attempt.url,
                attempts: attempt.attempt,
                lastStatusCode: attempt.status_code,
                lastError: attempt.error,
                at: now,
              },
            ]
          : [],
      );
      const enqueued = await writeOperationalNotifications(tx, { failed, disabled, circuits }, now);
      return { held: settled, disabled, circuits, enqueued };
    });
  }
}
