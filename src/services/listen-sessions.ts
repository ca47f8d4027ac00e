import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { SecretBox } from '../domain/crypto/secret-box.js';
import { conflict, DomainError, notFound } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import { REQUEST_EVENTS, SUBSCRIPTION_EVENT_OF, type NotificationEvent } from '../domain/notifications/events.js';
import { buildWebhookHeaders } from '../domain/notifications/signing.js';
import type { Db, Executor } from '../storage/database.js';
import { leaseListenCopies } from '../storage/deliveries.js';
import { lightTransaction } from '../storage/light-transaction.js';
import {
  deleteListenSession,
  deleteUnforwardedCopies,
  endListenSession,
  extendListenSession,
  findListenCopy,
  findListenSession,
  findOriginalUrl,
  insertListenSession,
  listEndedListenSessions,
  type ListenSession,
} from '../storage/repositories/listen-sessions.js';
import { recordAttempts } from '../storage/repositories/notifications.js';
import { listSubscriptionsForEvent } from '../storage/repositories/subscriptions.js';
import type { NotificationsTable } from '../storage/tables/index.js';
import { EVENT_TYPE_HEADER, MAX_LOGGED_RESPONSE_BYTES, USER_AGENT } from '../domain/notifications/webhook-headers.js';
import { loadSigningSecrets, loadSigningSecretsForUrl } from './signing-secrets.js';

/**
 * `rewards listen` (docs/receiving-webhooks.md, "Webhooks on a laptop"; docs/delivery.md, "Listen
 * copies"): a session receives a copy of each notified outcome of its account while its CLI
 * polls; the CLI forwards each copy to the developer's local URL and reports the answer, which
 * settles the copy's one attempt in the delivery log.
 */

/** What the listen service needs of the process: its database, its secret box (signing secrets) and its clock. */
export interface ListenContext {
  db: Db;
  box: SecretBox;
  clock: () => number;
}

/**
 * How long a worker process trusts its read of the live listen sessions (worker/notifications/listen-copies.ts).
 * A new session receives the outcomes recorded from this long after its creation; `POST
 * /listen-sessions` answers only then (LISTEN_SESSION_READY_MS), so the CLI's "Ready!" is true.
 */
export const LISTEN_SESSIONS_REFRESH_MS = 1_000;

export const LISTEN_EVENTS: readonly NotificationEvent[] = REQUEST_EVENTS;
/** A session with no poll for this long ends; each poll moves its end this far ahead. */
const LISTEN_SESSION_TTL_MS = 60_000;
/** A copy handed to a CLI is its alone for this long; unreported by then, the next poll of the session takes it again. */
const LISTEN_LEASE_MS = 60_000;
/** The longest long poll (seconds), and how often it looks for copies meanwhile. */
const LISTEN_MAX_WAIT_S = 25;
const LISTEN_POLL_MS = 250;
/** A new session is answered once every worker's read of the sessions (LISTEN_SESSIONS_REFRESH_MS) is younger than it. */
const LISTEN_SESSION_READY_MS = LISTEN_SESSIONS_REFRESH_MS + 100;
/** Ended sessions are swept this long after their end: a worker's read may still hold them live meanwhile. */
const LISTEN_SWEEP_AFTER_MS = 10 * LISTEN_SESSIONS_REFRESH_MS;

interface ListenSigningSecret {
  /** The receiver URL whose secret it is; null for the account's default secret. */
  url: string | null;
  secret: string;
}

export interface CreatedListenSession extends ListenSession {
  events: NotificationEvent[];
  signingSecrets: ListenSigningSecret[];
}

export interface ListenDelivery {
  notificationId: string;
  event: NotificationsTable['event'];
  headers: Record<string, string>;
  body: string;
}

const sessionNotFound = (id: string) => notFound(`listen session "${id}"`);

/** The account's session while it is live; an ended one (expired or deleted) is a 404 that says so. */
async function liveSession(deps: Pick<ListenContext, 'db' | 'clock'>, accountId: string, id: string): Promise<ListenSession> {
  const session = await findListenSession(deps.db, accountId, id);
  if (!session) throw sessionNotFound(id);
  if (session.expiresAt <= deps.clock()) {
    throw new DomainError('not_found', `listen session "${id}" has ended (stopped, or no poll for ${LISTEN_SESSION_TTL_MS / 1000} s); run \`rewards listen\` again to start a new one`);
  }
  return session;
}

/** The current secrets the account's receivers sign with: one per subscription URL for the events, then the account's default. */
async function signingSecretsOf(db: Executor, deps: Pick<ListenContext, 'box'>, accountId: string, events: readonly NotificationEvent[], now: number): Promise<ListenSigningSecret[]> {
  const urls = new Set<string>();
  for (const event of events) for (const route of await listSubscriptionsForEvent(db, accountId, SUBSCRIPTION_EVENT_OF[event])) if (route.active) urls.add(route.url);
  const found: ListenSigningSecret[] = [];
  for (const url of urls) {
    const [current] = await loadSigningSecretsForUrl(db, deps.box, accountId, url, now);
    if (current) found.push({ url, secret: current.secret });
  }
  const [fallback] = await loadSigningSecrets(db, deps.box, { accountId }, now);
  found.push({ url: null, secret: fallback!.secret });
  return found;
}

export async function createListenSession(deps: ListenContext, accountId: string, events: readonly NotificationEvent[] = LISTEN_EVENTS): Promise<CreatedListenSession> {
  const now = deps.clock();
  const session = { id: newId('lsn', now), accountId, events: [...new Set(events)], createdAt: now, expiresAt: now + LISTEN_SESSION_TTL_MS } satisfies ListenSession;
  await insertListenSession(deps.db, session);
  const signingSecrets = await signingSecretsOf(deps.db, deps, accountId, session.events, now);
  // Workers read the sessions once a second: from now on every outcome recorded gets its copy.
  await sleep(LISTEN_SESSION_READY_MS);
  return { ...session, signingSecrets };
}

/**
 * The exact headers the real call would carry: Standard Webhooks headers signed, at this moment,
 * with the secrets of the receiver the outcome went to (its URL's; the account's default when it
 * went nowhere or to a per-request URL no subscription uses), as the worker signs.
 */
async function deliveryOf(deps: ListenContext, copy: NotificationsTable): Promise<ListenDelivery> {
  const now = deps.clock();
  const url = await findOriginalUrl(deps.db, copy);
  const secrets = (url === undefined ? await loadSigningSecrets(deps.db, deps.box, { accountId: copy.account_id }, now) : await loadSigningSecretsForUrl(deps.db, deps.box, copy.account_id, url, now))
    .filter((s) => s.expiresAt === null || s.expiresAt > now)
    .map((s) => s.secret);
  const signed = buildWebhookHeaders({ msgId: copy.id, timestamp: Math.floor(now / 1000), body: copy.payload, secrets });
  return {
    notificationId: copy.id,
    event: copy.event,
    headers: { 'content-type': 'application/json', 'user-agent': USER_AGENT, ...signed, [EVENT_TYPE_HEADER]: copy.event },
    body: copy.payload,
  };
}

/**
 * The long poll: keeps the session live, leases up to `limit` of its copies waiting for a CLI and
 * answers them; with none, looks again every LISTEN_POLL_MS until `waitSeconds` passed (or the
 * caller went away) and answers an empty list.
 */
export async function pollListenDeliveries(deps: ListenContext, accountId: string, id: string, options: { waitSeconds: number; limit: number; gone?: () => boolean }): Promise<ListenDelivery[]> {
  const session = await liveSession(deps, accountId, id);
  const deadline = Date.now() + Math.min(options.waitSeconds, LISTEN_MAX_WAIT_S) * 1000;
  const lease = `listen:${randomBytes(12).toString('base64url')}`;
  for (;;) {
    const now = deps.clock();
    if (!(await extendListenSession(deps.db, session.id, now, now + LISTEN_SESSION_TTL_MS))) throw sessionNotFound(id);
    const taken = await lightTransaction(deps.db, (tx) => leaseListenCopies(tx, session, lease, now, now + LISTEN_LEASE_MS, options.limit));
    if (taken.length > 0) return Promise.all(taken.map((copy) => deliveryOf(deps, copy)));
    if (Date.now() + LISTEN_POLL_MS > deadline || options.gone?.()) return [];
    await sleep(LISTEN_POLL_MS);
  }
}

export interface ListenResult {
  statusCode?: number | undefined;
  latencyMs: number;
  responseBody?: string | undefined;
  error?: string | undefined;
}

/**
 * The local answer to a forwarded copy: its one attempt, settled by the statements that settle
 * the worker's attempts (recordAttempts: under the lease it was taken with, so a result reported
 * twice, or for a copy no CLI holds, is a 409), succeeded on a 2xx and failed otherwise. A copy
 * counts toward no subscription's health. Answers the copy's status.
 */
export async function recordListenResult(deps: Pick<ListenContext, 'db' | 'clock'>, accountId: string, id: string, notificationId: string, result: ListenResult): Promise<'succeeded' | 'failed'> {
  const session = await findListenSession(deps.db, accountId, id);
  if (!session) throw sessionNotFound(id);
  const copy = await findListenCopy(deps.db, session, notificationId);
  if (!copy) throw notFound(`delivery "${notificationId}" of listen session "${id}"`);
  const notHeld = () => conflict(`delivery "${notificationId}" is not waiting for a result: its result was already recorded, or no listener holds it (a poll hands it out)`);
  if (copy.status !== 'pending' || copy.lease === null) throw notHeld();
  const now = deps.clock();
  const ok = result.statusCode !== undefined && result.statusCode >= 200 && result.statusCode < 300;
  const status = ok ? 'succeeded' : 'failed';
  const responseBody = result.responseBody === undefined ? null : Buffer.from(result.responseBody, 'utf8').subarray(0, MAX_LOGGED_RESPONSE_BYTES).toString('utf8');
  const { settled } = await lightTransaction(deps.db, (tx) =>
    recordAttempts(tx, [
      {
        attempt: {
          notification_id: copy.id,
          attempt: copy.attempt_count + 1,
          started_at: now - Math.round(result.latencyMs),
          url: copy.url,
          status_code: result.statusCode ?? null,
          latency_ms: Math.round(result.latencyMs),
          response_body: responseBody,
          error: result.error ?? (result.statusCode === undefined ? 'the local receiver gave no answer' : null),
          outcome: status,
          request_headers: null,
          retry_after: null,
        },
        lease: copy.lease!,
        status,
        nextAttemptAt: null,
        now,
      },
    ]),
  );
  if (!settled.has(copy.id)) throw notHeld();
  return status;
}

/** Ends the session now (its CLI stops): no more copies, and those not forwarded are removed. */
export async function endListenSessionNow(deps: Pick<ListenContext, 'db' | 'clock'>, accountId: string, id: string): Promise<void> {
  const session = await findListenSession(deps.db, accountId, id);
  if (!session) throw sessionNotFound(id);
  await endListenSession(deps.db, session.id, deps.clock());
  await deleteUnforwardedCopies(deps.db, session);
}

/**
 * Worker maintenance: sessions ended more than LISTEN_SWEEP_AFTER_MS ago (their CLI stopped
 * polling, or ended them) lose the copies no CLI forwarded, then their row. Pending copies must
 * not stay: a pending notification keeps its log partition from being dropped.
 */
export async function sweepEndedListenSessions(db: Executor, now: number): Promise<number> {
  let swept = 0;
  for (;;) {
    const ended = await listEndedListenSessions(db, now - LISTEN_SWEEP_AFTER_MS, 100);
    for (const session of ended) {
      await deleteUnforwardedCopies(db, session);
      await deleteListenSession(db, session.id);
    }
    swept += ended.length;
    if (ended.length < 100) return swept;
  }
}
