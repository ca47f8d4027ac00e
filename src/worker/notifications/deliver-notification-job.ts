import type { Deps } from '../../deps.js';
import { decideAfterAttempt } from '../../domain/notifications/retry-policy.js';
import { loadDeliveryTarget } from '../../domain/subscriptions/delivery.js';
import { loadSigningSecrets } from '../../domain/subscriptions/signing-secrets.js';
import { completeJob, type ClaimedJob } from '../../storage/queue/index.js';
import { findNotification, recordAttempt, type NotificationRow } from '../../storage/repositories/notifications.js';
import type { JobHandlers } from '../job-handlers.js';
import type { AttemptResult, DeliveryAttemptInput } from '../outbound/deliver.js';
import { DELIVER_NOTIFICATION, enqueueDeliveries, type DeliverNotificationPayload } from './schedule-delivery.js';

type Prepared = { input: DeliveryAttemptInput } | { refused: string; url: string };

/** Reads what this attempt sends and where: a subscription's callback as it is now, or the request's own URL. */
async function prepareAttempt(deps: Deps, row: NotificationRow): Promise<Prepared> {
  const now = deps.clock();
  const base = { body: row.payload, eventType: row.event, msgId: row.id };
  if (row.subscription_id === null) {
    const secrets = await loadSigningSecrets(deps.db, deps.box, { accountId: row.account_id }, now);
    return { input: { ...base, url: row.url, secrets: secrets.map((s) => s.secret) } };
  }
  const target = await loadDeliveryTarget(deps.db, deps.box, row.subscription_id);
  if (!target) return { refused: 'the subscription was deleted', url: row.url };
  if (!target.active) return { refused: 'the subscription is inactive', url: target.url };
  const secrets = await loadSigningSecrets(deps.db, deps.box, { subscriptionId: target.subscriptionId }, now);
  return {
    input: { ...base, url: target.url, secrets: secrets.map((s) => s.secret), authorization: target.authorization, customHeaders: target.customHeaders },
  };
}

/**
 * One delivery attempt of one notification. The HTTP call runs outside any transaction; then,
 * in one transaction under the job's lease, the attempt is logged, the notification moves on and
 * the next attempt (if any) is scheduled. A crash in between repeats the attempt with the same
 * webhook-id, which receivers use to drop duplicates (at-least-once delivery).
 */
export async function deliverNotification(deps: Deps, job: ClaimedJob<DeliverNotificationPayload>): Promise<void> {
  const row = await findNotification(deps.db, job.payload.notificationId);
  if (!row || row.status !== 'pending') {
    await completeJob(deps.db, job);
    return;
  }
  const startedAt = deps.clock();
  const prepared = await prepareAttempt(deps, row);
  const result: AttemptResult = 'input' in prepared ? await deps.outbound.deliverAttempt(prepared.input) : { ok: false, latencyMs: 0, error: prepared.refused };
  const attempt = row.attempt_count + 1;
  const now = deps.clock();
  const decision =
    'refused' in prepared
      ? ({ kind: 'failed' } as const)
      : decideAfterAttempt({
          attempt,
          maxAttempts: deps.config.retryMaxAttempts,
          retryIntervalMs: deps.config.retryIntervalMs,
          statusCode: result.statusCode,
          retryAfter: result.retryAfter,
          now: new Date(now),
        });
  const nextAttemptAt = decision.kind === 'retry' ? decision.at.getTime() : null;

  await deps.db.transaction().execute(async (tx) => {
    await completeJob(tx, job);
    await recordAttempt(
      tx,
      {
        notification_id: row.id,
        attempt,
        started_at: startedAt,
        url: 'input' in prepared ? prepared.input.url : prepared.url,
        status_code: result.statusCode ?? null,
        latency_ms: Math.round(result.latencyMs),
        response_body: result.responseBody ?? null,
        error: result.error ?? null,
        outcome: decision.kind,
      },
      { status: decision.kind === 'retry' ? 'pending' : decision.kind, nextAttemptAt, now },
    );
    if (nextAttemptAt !== null) await enqueueDeliveries(tx, [row.id], { runAt: nextAttemptAt, now, wakeOtherProcesses: false });
  });
  deps.metrics.deliveryAttempts.inc({ event: row.event, outcome: decision.kind });
  deps.metrics.deliveryLatency.observe({ event: row.event }, result.latencyMs / 1000);
}

export function notificationJobHandlers(deps: Deps): JobHandlers {
  return {
    [DELIVER_NOTIFICATION]: {
      mode: 'standalone',
      handle: (job) => deliverNotification(deps, job as ClaimedJob<DeliverNotificationPayload>),
    },
  };
}
