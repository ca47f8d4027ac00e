import { Batcher } from '../../batcher.js';
import type { Config } from '../../config.js';
import type { SecretBox } from '../../domain/crypto/secret-box.js';
import type { Logger } from '../../logger.js';
import type { Metrics } from '../../metrics.js';
import type { Db } from '../../storage/database.js';
import { decideAfterAttempt } from '../../domain/notifications/retry-policy.js';
import { loadDeliveryTarget, type DeliveryTarget } from '../../services/delivery-targets.js';
import { loadSigningSecrets, loadSigningSecretsForUrl, type SigningSecret } from '../../services/signing-secrets.js';
import { DELIVERIES, failRun, letGo, releaseWaitingFor, type Delivery } from '../../storage/deliveries.js';
import type { JobSignals } from '../../storage/queue/index.js';
import { findNotificationsForDelivery, type NotificationForDelivery } from '../../storage/repositories/notifications.js';
import type { Deliverer } from '../delivery-loop.js';
import { whileLeaseHolds } from '../while-lease-holds.js';
import type { AttemptResult, DeliveryAttemptInput } from '../outbound/deliver.js';
import type { OutboundDelivery } from '../outbound/outbound-config.js';
import { AttemptLogWriter } from './attempt-log-writer.js';
import { reportsFailure, writeOperationalNotifications } from '../../services/operational-notifications.js';
import { RateLimiter } from './rate-limiter.js';
import { CircuitBreakers } from './circuit-breakers.js';
import type { CircuitSettings } from '../../domain/notifications/circuit-breaker.js';
import type { TraceSpan, Tracing } from '../../tracing.js';

/** What delivering notifications uses; the composition root (deps.ts) builds it. */
export interface NotificationDeliveryDeps {
  db: Db;
  /** Opens the stored callback credentials and signing secrets. */
  box: SecretBox;
  clock: () => number;
  log: Logger;
  config: Pick<Config, 'retryMaxAttempts' | 'retryIntervalMs' | 'subscriptionDisableAfterMs' | 'callbackTimeoutMs' | 'jobLeaseMs'> & { circuitBreaker: CircuitSettings };
  metrics: Pick<Metrics, 'deliveryAttempts' | 'deliveryLatency' | 'queue'>;
  /** Wakes this process's worker after a commit that wrote operational notifications (new deliveries). */
  signals: JobSignals;
  outbound: Pick<OutboundDelivery, 'deliverAttempt'>;
  /** Traces (docs/deployment.md, "Traces"): a span per attempt; undefined while off. */
  tracing?: Tracing | undefined;
}

type Prepared = { input: DeliveryAttemptInput; rateLimit: number | null } | { refused: string; url: string };

/**
 * Subscriptions and signing secrets change rarely and are read for every attempt: a per-process
 * cache saves two queries and two decryptions per delivery. A subscription is cached under its
 * `updated_at` (read with the notification), so an edit applies to the very next attempt; signing
 * secrets for one second, so a rotation reaches every worker within a second. A cached secret is
 * used only until its own expiry: a rotated-out secret stops signing when its overlap ends.
 */
const TARGET_CACHE_MS = 1_000;

class TargetCache {
  readonly #entries = new Map<string, { at: number; value: Promise<unknown> }>();
  constructor(private readonly clock: () => number) {}

  get<T>(key: string, load: () => Promise<T>): Promise<T> {
    const now = this.clock();
    const hit = this.#entries.get(key);
    if (hit && now - hit.at < TARGET_CACHE_MS) return hit.value as Promise<T>;
    if (this.#entries.size > 10_000) this.#entries.clear();
    const value = load();
    this.#entries.set(key, { at: now, value });
    value.catch(() => this.#entries.delete(key));
    return value;
  }
}

/**
 * The notification and, in the same query, when its subscription last changed (the cache key).
 * The worker starts every job of a claim in the same tick, so lookups made within one tick are
 * answered by one query (a Batcher): one read per claim instead of one per delivery.
 */
class NotificationLoader {
  readonly #batcher: Batcher<string, NotificationForDelivery | undefined>;

  constructor(db: Db) {
    this.#batcher = new Batcher({
      gather: 'microtask',
      maxBatch: 1000,
      run: async (ids) => {
        const byId = new Map((await findNotificationsForDelivery(db, [...new Set(ids)])).map((row) => [row.id, row]));
        return ids.map((id) => byId.get(id));
      },
    });
  }

  load(id: string): Promise<NotificationForDelivery | undefined> {
    return this.#batcher.submit(id);
  }
}

interface DeliveryContext {
  deps: NotificationDeliveryDeps;
  notifications: NotificationLoader;
  cache: TargetCache;
  log: AttemptLogWriter;
  limiter: RateLimiter;
  circuits: CircuitBreakers;
}

/** Reads what this attempt sends and where: a subscription's callback as it is now, or the request's own URL. */
async function prepareAttempt({ deps, cache }: DeliveryContext, row: NotificationForDelivery): Promise<Prepared> {
  const now = deps.clock();
  const base = { accountId: row.account_id, body: row.payload, eventType: row.event, msgId: row.id, ...(row.test === 1 ? { test: true } : {}) };
  // An operator cut the account off: nothing of it leaves, not even a test send (docs/requests.md, "Deactivated accounts").
  if (row.account_active !== null && Number(row.account_active) === 0) return { refused: 'not sent: the account is inactive', url: row.url };
  const secretsOf = async (key: string, load: () => Promise<SigningSecret[]>) =>
    (await cache.get(`secrets:${key}`, load)).filter((s) => s.expiresAt === null || s.expiresAt > now).map((s) => s.secret);
  if (row.subscription_id === null) {
    // A per-request URL: signed with the secret of the account's subscriptions at that URL, else the account's default.
    const secrets = await secretsOf(`${row.account_id}\u0000${row.url}`, () => loadSigningSecretsForUrl(deps.db, deps.box, row.account_id, row.url, now));
    return { input: { ...base, url: row.url, secrets }, rateLimit: null };
  }
  const subscriptionId = row.subscription_id;
  if (row.subscription_updated_at === null) return { refused: 'the subscription was deleted', url: row.url };
  const target = await cache.get<DeliveryTarget | undefined>(`target:${subscriptionId}:${row.subscription_updated_at}`, () => loadDeliveryTarget(deps.db, deps.box, subscriptionId));
  if (!target) return { refused: 'the subscription was deleted', url: row.url };
  // A test send goes to an inactive subscription too: that is when people test.
  if (!target.active && row.test !== 1) return { refused: 'the subscription is inactive', url: target.url };
  return {
    input: {
      ...base,
      url: target.url,
      secrets: await secretsOf(subscriptionId, () => loadSigningSecrets(deps.db, deps.box, { subscriptionId }, now)),
      authorization: target.authorization,
      customHeaders: target.customHeaders,
    },
    rateLimit: target.rateLimit,
  };
}

/**
 * Traces on: the span of one attempt, a client span in the request's trace (the notification's
 * `trace_parent`, its registration's or processing's span; a notification without one, such as a
 * test send, begins a trace of its own). What it says of the call: the event, the `webhook-id`, the
 * attempt's number and the URL's host and port, never the URL's path or query, a header, a secret
 * or the payload.
 */
function startAttemptSpan(tracing: Tracing, row: NotificationForDelivery, attempt: number, url: string): TraceSpan {
  let target: URL | undefined;
  try {
    target = new URL(url);
  } catch {
    // A URL that does not parse fails its attempt (BAD_URL); the span only lacks its host.
  }
  const port = target && (target.port ? Number(target.port) : target.protocol === 'https:' ? 443 : 80);
  return tracing.startSpan(`deliver ${row.event}`, {
    kind: 'client',
    parent: row.trace_parent ?? undefined,
    attributes: {
      'http.request.method': 'POST',
      ...(target ? { 'server.address': target.hostname.replace(/^\[|\]$/g, ''), 'server.port': port!, 'url.scheme': target.protocol.replace(/:$/, '') } : {}),
      'rewards.webhook.event': row.event,
      'rewards.webhook.id': row.id,
      'rewards.webhook.attempt': attempt,
      ...(attempt > 1 ? { 'http.request.resend_count': attempt - 1 } : {}),
      ...(row.request_id !== '' ? { 'rewards.request.id': row.request_id } : {}),
      ...(row.subscription_id !== null ? { 'rewards.subscription.id': row.subscription_id } : {}),
      ...(row.test === 1 ? { 'rewards.webhook.test': true } : {}),
    },
  });
}

/** Ends an attempt's span with what came of it: the receiver's status code, the outcome, and on failure status ERROR. */
function endAttemptSpan(span: TraceSpan, result: AttemptResult, outcome: 'succeeded' | 'retry' | 'failed', refused: string | undefined): void {
  span.setAttributes({ 'rewards.webhook.outcome': outcome, ...(result.statusCode !== undefined ? { 'http.response.status_code': result.statusCode } : {}) });
  if (!result.ok) {
    // The delivery log's text: it carries no secret (DeliveryFailure), and the account reads the same in its log.
    const errorType = result.statusCode !== undefined ? String(result.statusCode) : refused !== undefined ? 'not_sent' : 'no_answer';
    span.fail(result.error ?? 'failed', errorType);
  }
  span.end();
}

/**
 * One delivery attempt of one notification. The HTTP call runs outside any transaction; then,
 * under the delivery's lease and together with other attempts finishing at the same time, the
 * attempt is logged, the notification moves on and the next attempt (if any) is scheduled. A
 * crash in between repeats the attempt with the same webhook-id, which receivers use to drop
 * duplicates (at-least-once delivery). Resolves false when the lease was lost meanwhile.
 */
async function deliverNotification(context: DeliveryContext, delivery: Delivery, callOver: () => void): Promise<boolean> {
  const { deps } = context;
  const row = await context.notifications.load(delivery.id);
  if (!row || row.status !== 'pending') {
    // Nothing to send (already delivered, or gone): let it go, if it is still this worker's.
    return (await letGo(deps.db, [delivery])).has(delivery.id);
  }
  const startedAt = deps.clock();
  const prepared = await prepareAttempt(context, row);
  // Circuit breaker: while the endpoint's circuit is open, the delivery is held (no attempt, no
  // outbound slot) unless it is the circuit's probe, a test send or a manual retry.
  if ('input' in prepared) {
    const admission = await context.circuits.admit({ delivery, accountId: row.account_id, url: row.url, bypass: row.test === 1 || row.manual_resume_at !== null });
    if (admission !== 'send') return admission === 'held';
  }
  // Rate limit: over its subscription's limit, the delivery is not sent now; it waits for its turn
  // (postponed by the limiter, its lease let go) and it uses no attempt.
  if ('input' in prepared && prepared.rateLimit !== null) {
    const turn = await context.limiter.turn({ delivery, subscriptionId: row.subscription_id!, limit: prepared.rateLimit, test: row.test === 1 });
    if (turn !== 'now') return turn === 'postponed';
  }
  const attempt = row.attempt_count + 1;
  const span = deps.tracing ? startAttemptSpan(deps.tracing, row, attempt, 'input' in prepared ? prepared.input.url : prepared.url) : undefined;
  const result: AttemptResult = 'input' in prepared ? await deps.outbound.deliverAttempt(prepared.input) : { ok: false, latencyMs: 0, error: prepared.refused };
  callOver();
  const now = deps.clock();
  const decision =
    'refused' in prepared
      ? ({ kind: 'failed' } as const)
      : decideAfterAttempt({
          // Attempts of manual retries use none of the automatic ones (docs/delivery.md, "Manual retry").
          attempt: attempt - (row.manual_attempts ?? 0),
          ...(row.manual_resume_at !== null ? { manual: { resumeAt: row.manual_resume_at > 0 ? new Date(row.manual_resume_at) : null } } : {}),
          // A test send gets one attempt: its outcome is the answer to "does my endpoint work?".
          maxAttempts: row.test === 1 ? 1 : deps.config.retryMaxAttempts,
          retryIntervalMs: deps.config.retryIntervalMs,
          statusCode: result.statusCode,
          retryAfter: result.retryAfter,
          now: new Date(now),
          jitter: Math.random(),
        });
  if (span) endAttemptSpan(span, result, decision.kind, 'refused' in prepared ? prepared.refused : undefined);
  const recorded = await context.log.settle({
    delivery,
    accountId: row.account_id,
    attempt: {
      notification_id: row.id,
      attempt,
      started_at: startedAt,
      url: 'input' in prepared ? prepared.input.url : prepared.url,
      status_code: result.statusCode ?? null,
      latency_ms: Math.round(result.latencyMs),
      response_body: result.responseBody ?? null,
      error: result.error ?? null,
      outcome: decision.kind,
      request_headers: result.requestHeaders ? JSON.stringify(result.requestHeaders) : null,
      retry_after: result.retryAfter ?? null,
    },
    status: decision.kind === 'retry' ? 'pending' : decision.kind,
    nextAttemptAt: decision.kind === 'retry' ? decision.at.getTime() : null,
    now,
    // A test send or a refusal says nothing about the endpoint's health.
    countsFor: 'input' in prepared && row.test !== 1 ? row.subscription_id : null,
    endpointUrl: 'input' in prepared && !result.notTheEndpoint ? row.url : null,
    notification: { event: row.event, requestId: row.request_id, test: row.test === 1 },
  });
  if (recorded) {
    deps.metrics.deliveryAttempts.inc({ event: row.event, outcome: decision.kind });
    deps.metrics.deliveryLatency.observe({ event: row.event }, result.latencyMs / 1000);
  }
  return recorded;
}

/**
 * A run that threw (its attempt could not be made or recorded): tried again after a retry delay,
 * or, after RUNS_WITHOUT_OUTCOME such runs, ended failed instead of waiting forever, and told to
 * the account like a failed last attempt. Written again while the database cannot serve, as long
 * as the lease holds.
 */
async function runFailed(context: DeliveryContext, delivery: Delivery, error: unknown): Promise<void> {
  const { deps } = context;
  const reason = `the delivery could not be run: ${error instanceof Error ? error.message : String(error)}`.slice(0, 1000);
  const record = () =>
    deps.db.transaction().execute(async (tx) => {
      const now = deps.clock();
      const outcome = await failRun(tx, delivery, reason, now);
      if (outcome.state !== 'failed') return outcome.state;
      const { ended } = outcome;
      await releaseWaitingFor(tx, [delivery.id], now);
      const notification = { event: ended.event, requestId: ended.request_id, test: Number(ended.test) === 1 };
      if (reportsFailure(notification)) {
        const failed = {
          accountId: ended.account_id,
          notificationId: delivery.id,
          requestId: ended.request_id,
          event: notification.event,
          url: ended.url,
          attempts: Number(ended.attempt_count),
          lastStatusCode: ended.last_status_code,
          lastError: reason,
          at: now,
        };
        await writeOperationalNotifications(tx, { failed: [failed], disabled: [] }, now);
      }
      return outcome.state;
    });
  try {
    const state = await whileLeaseHolds(delivery, record);
    if (state === 'lost') deps.metrics.queue.leasesLost.inc();
    deps.log.warn({ err: error, notificationId: delivery.id, run: delivery.runs, state }, 'a delivery run ended without an outcome');
  } catch (failure) {
    deps.log.error({ err: failure, notificationId: delivery.id }, 'could not record a failed delivery run; its lease will end and a claim will take it');
  }
}

/** The delivery loop's deliverer: notifications, sent through the outbound thread and settled by the attempt log. */
export function notificationDeliverer(deps: NotificationDeliveryDeps): Deliverer {
  const circuits = new CircuitBreakers(deps.db, {
    clock: deps.clock,
    settings: deps.config.circuitBreaker,
    // A probe that never settles (its worker died) is replaced once its call and its lease are surely over.
    probeTimeoutMs: deps.config.callbackTimeoutMs + deps.config.jobLeaseMs,
    log: deps.log,
  });
  const context: DeliveryContext = {
    deps,
    notifications: new NotificationLoader(deps.db),
    cache: new TargetCache(deps.clock),
    limiter: new RateLimiter(deps.db, deps.clock),
    circuits,
    log: new AttemptLogWriter(deps.db, {
      disableAfterMs: deps.config.subscriptionDisableAfterMs,
      circuits: deps.config.circuitBreaker,
      onCircuitChanged: (change) => {
        circuits.changed(change);
        deps.log.warn(
          change,
          change.state === 'open' ? 'circuit breaker opened: new notifications to the endpoint are held while probes test it' : 'circuit breaker closed: the endpoint answered; what it held goes out',
        );
      },
      onDisabled: (disabled) => deps.log.warn(disabled, 'subscription switched off: every attempt failed for SUBSCRIPTION_DISABLE_AFTER'),
      onEnqueued: () => deps.signals.enqueued([DELIVERIES]),
      onRetry: (error, waitMs) => deps.log.debug({ err: error, waitMs }, 'an attempt could not be recorded (the database cannot serve): trying again while its lease holds'),
    }),
  };
  return {
    deliver: (delivery, callOver) => deliverNotification(context, delivery, callOver),
    runFailed: (delivery, error) => runFailed(context, delivery, error),
    upkeep: () => circuits.upkeep(),
  };
}
