import { sql } from 'kysely';
import { firstIdAt } from '../domain/ids.js';
import type { Executor } from './database.js';
import { dialectOf } from './dialect.js';
import { precompiled } from './precompiled.js';
import { prepareStatement } from './prepared-statements.js';
import { dueWith } from './queue/due-jobs.js';
import { newLease, retryDelayMs } from './queue/job.js';
import type { NotificationsTable } from './tables/index.js';

/**
 * The delivery queue: each pending notification is its own delivery, in its own row. This module
 * is the only writer of a delivery's schedule and lease columns — `run_at` (when it is due; null
 * while it waits for another notification, once it ended, and for a listen copy), `lease` and
 * `lease_until` (who holds it, until when), `runs` and `postponed` — and every way they change is
 * one function here: a new row's schedule, claim, hand-off, renew, settle, let go, a failed run,
 * postpone, hold (circuit breaker), release, manual retry, recover, switch-off, and a listen copy's
 * lease. The rules these
 * writes keep are stated in worker/delivery-ownership.ts.
 *
 * Every write of a holder is conditional on its lease (`lease = held lease`): a holder whose lease
 * another worker took over writes nothing. Every write that is not a holder's leaves a delivery in
 * flight alone (`lease is null or lease_until <= now`), except the settle, which is the holder's.
 *
 * What a claim writes (`lease`, `lease_until`, `runs`) is in no index, so on PostgreSQL it is a
 * HOT update wherever its page has room (`NOTIFICATIONS_FILLFACTOR` in log-partitions.ts keeps that
 * room). The claim therefore does not move `run_at` past the lease: a leased row stays in the due
 * range and the claim steps over it (`lease_until <= now`), a few hundred rows per worker at most.
 */

/** The wake-up topic of deliveries: what a commit that made some due names (JobSignals, NOTIFY). */
export const DELIVERIES = 'deliver-notification';

/** Runs of a delivery that ended without an outcome (its worker died or its run threw) after which it fails. */
export const RUNS_WITHOUT_OUTCOME = 20;

/** A delivery as the process that holds it knows it. */
export interface Delivery {
  /** The notification's id (its `webhook-id`). */
  readonly id: string;
  readonly accountId: string;
  /** Runs started without an outcome so far, this one included (RUNS_WITHOUT_OUTCOME). */
  readonly runs: number;
  /** The token of the claim or hand-off that holds it: unique to that claim, never changed in memory. */
  readonly lease: string;
  /** When the lease ends, as this process last wrote it (renewals move it). */
  leaseUntil: number;
  readonly createdAt: number;
}

type DeliveryRow = Pick<NotificationsTable, 'id' | 'account_id' | 'runs' | 'lease' | 'lease_until' | 'created_at'>;

function toDelivery(row: DeliveryRow): Delivery {
  return { id: row.id, accountId: row.account_id, runs: Number(row.runs), lease: row.lease!, leaseUntil: Number(row.lease_until), createdAt: Number(row.created_at) };
}

/** Oldest first, as the notifications were written (ids break ties). */
const byCreation = (a: Delivery, b: Delivery) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1);

/** The schedule columns of a new notification: due `runAt`, or never (null: held behind another, or a listen copy). */
export function newSchedule(runAt: number | null): Pick<NotificationsTable, 'run_at' | 'lease' | 'lease_until' | 'runs' | 'postponed' | 'held_at'> {
  return { run_at: runAt, lease: null, lease_until: null, runs: 0, postponed: 0, held_at: null };
}

// ---------------------------------------------------------------------------------------------
// Taking deliveries: the claim and the hand-off.

export interface DeliveryClaim {
  workerId: string;
  limit: number;
  leaseMs: number;
  now: number;
  /** Accounts this claim leaves out (the loop holds as many of theirs as it takes of one account). */
  excludeAccounts?: readonly string[];
  /** Deliveries the claimer still runs whose lease may have ended (delivery-ownership.ts, rule 3). */
  excludeIds?: readonly string[];
}

/** The due deliveries: pending, scheduled, due, and not under a lease that still runs. The first two terms are the partial indexes' predicate. */
const dueDelivery = (now: number) => sql<boolean>`status = 'pending' and run_at is not null and (lease_until is null or lease_until <= cast(${now} as bigint))`;

/** Leases up to `limit` due deliveries in one statement, oldest `run_at` first, each counting a run. */
export async function claimDeliveries(db: Executor, claim: DeliveryClaim): Promise<Delivery[]> {
  if (claim.limit <= 0) return [];
  const lease = newLease(claim.workerId);
  const due = dueWith({
    table: 'notifications',
    groups: { column: 'account_id', index: 'notifications_due_account_idx' },
    parts: [dueDelivery(claim.now)],
    limit: claim.limit,
    now: claim.now,
    dialect: dialectOf(db),
    excludeGroups: claim.excludeAccounts,
    excludeIds: claim.excludeIds,
  });
  const statement = sql<DeliveryRow>`${due} update notifications set lease = ${lease}, lease_until = cast(${claim.now + claim.leaseMs} as bigint), runs = runs + 1
      where id in (select id from due) returning id, account_id, runs, lease, lease_until, created_at`.compile(db);
  // The plain claim, the loop's usual one, has one text: prepared once per connection. One that
  // leaves accounts or ids out has a text of its own, planned each time.
  if (!claim.excludeAccounts?.length && !claim.excludeIds?.length) prepareStatement(statement.sql);
  const { rows } = await db.executeQuery(statement);
  return rows.map(toDelivery).sort(byCreation);
}

/**
 * A worker's offer to a batch that writes notifications: it takes, in the batch's own insert, as
 * many of the deliveries due now as `room` allows (none of `excludedAccounts`), leased to it as a
 * claim would lease them; it starts them after the commit (`taken`), and says how many it left to
 * a claim (`declined`).
 */
export interface HandOff {
  readonly lease: { token: string; until: number };
  room: number;
  readonly excludedAccounts: ReadonlySet<string>;
  readonly taken: Delivery[];
  declined: number;
}

export function handOff(lease: { token: string; until: number }, room: number, excludedAccounts: ReadonlySet<string> = new Set()): HandOff {
  return { lease, room, excludedAccounts, taken: [], declined: 0 };
}

/** The rows to insert, those the hand-off takes written leased to its worker (a new row's first run). */
export function applyHandOff<Row extends NotificationsTable>(rows: readonly Row[], offer: HandOff | undefined, now: number): Row[] {
  if (!offer) return [...rows];
  return rows.map((row) => {
    if (row.run_at === null || row.run_at > now || row.status !== 'pending') return row;
    if (offer.room <= 0 || offer.excludedAccounts.has(row.account_id)) {
      offer.declined += 1;
      return row;
    }
    offer.room -= 1;
    const leased = { ...row, lease: offer.lease.token, lease_until: offer.lease.until, runs: 1 };
    offer.taken.push(toDelivery(leased));
    return leased;
  });
}

// ---------------------------------------------------------------------------------------------
// The holder's writes, each conditional on its lease.

const held = (deliveries: readonly Delivery[]) => JSON.stringify(deliveries.map((delivery) => ({ held_id: delivery.id, held_lease: delivery.lease })));
const HELD = { held_id: 'text', held_lease: 'text' } as const;

/**
 * The heartbeat: renews every lease of the list still held to `until` (one statement). Rows locked
 * right now are being settled by this worker: skipped (a renewal waiting for them could deadlock
 * with that commit). Returns how many were renewed; their `leaseUntil` is updated.
 */
const renewHeld = precompiled<[held: string, until: number], { id: string }>((db, heldRows, until) => {
  const dialect = dialectOf(db);
  return sql<{ id: string }>`update notifications set lease_until = cast(${until} as bigint) where id in (
      select n.id from notifications n join ${dialect.records(heldRows, 'h', HELD)} on n.id = h.held_id and n.lease = h.held_lease
      ${dialect.rowLock({ of: 'n', skipLocked: true })}) returning id`;
});

export async function renewLeases(db: Executor, deliveries: readonly Delivery[], until: number): Promise<number> {
  if (deliveries.length === 0) return 0;
  const renewed = new Set((await renewHeld(db, held(deliveries), until)).map((row) => row.id));
  for (const delivery of deliveries) if (renewed.has(delivery.id)) delivery.leaseUntil = until;
  return renewed.size;
}

/** One finished attempt's effect on its delivery, written only while `lease` still holds it. */
export interface Settlement {
  id: string;
  lease: string;
  status: NotificationsTable['status'];
  attemptCount: number;
  lastStatusCode: number | null;
  lastError: string | null;
  /** The next attempt's time (a retry), or null. */
  nextAttemptAt: number | null;
  now: number;
}

/**
 * The settle: the outcome, the next attempt's time, and the lease let go; only where the lease is
 * still the one it ran under. An attempt a manual retry asked for (`manual_resume_at` set: the row
 * is held under the lease, so it is what the worker read) is counted in `manual_attempts`, and the
 * retry is used up.
 */
const settleHeld = precompiled(
  (db, rows: string) =>
    sql<{ id: string; has_waiters: number }>`update notifications as n set status = m.status, attempt_count = m.attempt_count,
            last_status_code = m.last_status_code, last_error = m.last_error, updated_at = m.updated_at, completed_at = m.completed_at,
            run_at = m.next_run_at, lease = null, lease_until = null, postponed = 0, runs = 0,
            manual_attempts = case when n.manual_resume_at is null then n.manual_attempts else coalesce(n.manual_attempts, 0) + 1 end, manual_resume_at = null
          from ${dialectOf(db).records(rows, 'm', {
            notification_id: 'text',
            held_lease: 'text',
            status: 'text',
            attempt_count: 'int',
            last_status_code: 'int',
            last_error: 'text',
            updated_at: 'bigint',
            completed_at: 'bigint',
            next_run_at: 'bigint',
          })}
          where n.id = m.notification_id and n.lease = m.held_lease returning id, has_waiters`,
);

/** Settles the deliveries still held; answers those settled, and which of them something waits for (`has_waiters`, docs/delivery.md "Order"). */
export async function settleDeliveries(db: Executor, settlements: readonly Settlement[]): Promise<{ settled: Set<string>; waitedFor: Set<string> }> {
  if (settlements.length === 0) return { settled: new Set(), waitedFor: new Set() };
  const rows = await settleHeld(
    db,
    JSON.stringify(
      settlements.map((s) => ({
        notification_id: s.id,
        held_lease: s.lease,
        status: s.status,
        attempt_count: s.attemptCount,
        last_status_code: s.lastStatusCode,
        last_error: s.lastError,
        updated_at: s.now,
        completed_at: s.status === 'pending' ? null : s.now,
        next_run_at: s.status === 'pending' ? s.nextAttemptAt : null,
      })),
    ),
  );
  return { settled: new Set(rows.map((row) => row.id)), waitedFor: new Set(rows.filter((row) => Number(row.has_waiters) === 1).map((row) => row.id)) };
}

/**
 * Lets go of deliveries without an attempt to record: their notification is not pending any more
 * (ended meanwhile, or gone). Clears the schedule and the lease of those still held; returns their ids.
 */
const letGoHeld = precompiled<[held: string], { id: string }>(
  (db, heldRows) =>
    sql<{ id: string }>`update notifications set run_at = null, lease = null, lease_until = null
      where id in (select n.id from notifications n join ${dialectOf(db).records(heldRows, 'h', HELD)} on n.id = h.held_id and n.lease = h.held_lease) returning id`,
);

export async function letGo(db: Executor, deliveries: readonly Delivery[]): Promise<Set<string>> {
  if (deliveries.length === 0) return new Set();
  return new Set((await letGoHeld(db, held(deliveries))).map((row) => row.id));
}

/**
 * A run that ended without an outcome (it threw): due again after a job's retry delay, or, after
 * RUNS_WITHOUT_OUTCOME runs, ended `failed` with `reason` (answered as ended, for the caller to
 * tell the account). 'lost' when another worker holds it now (nothing written).
 */
export async function failRun(
  db: Executor,
  delivery: Delivery,
  reason: string,
  now: number,
): Promise<{ state: 'retrying' | 'lost' } | { state: 'failed'; ended: Pick<NotificationsTable, 'account_id' | 'request_id' | 'event' | 'url' | 'test' | 'attempt_count' | 'last_status_code'> }> {
  if (delivery.runs < RUNS_WITHOUT_OUTCOME) {
    const result = await db
      .updateTable('notifications')
      .set({ run_at: now + retryDelayMs(delivery.runs), lease: null, lease_until: null })
      .where('id', '=', delivery.id)
      .where('lease', '=', delivery.lease)
      .executeTakeFirst();
    return { state: Number(result.numUpdatedRows) === 1 ? 'retrying' : 'lost' };
  }
  const ended = await db
    .updateTable('notifications')
    .set({ status: 'failed', last_error: reason, updated_at: now, completed_at: now, run_at: null, lease: null, lease_until: null })
    .where('id', '=', delivery.id)
    .where('lease', '=', delivery.lease)
    .where('status', '=', 'pending')
    .returning(['account_id', 'request_id', 'event', 'url', 'test', 'attempt_count', 'last_status_code'])
    .executeTakeFirst();
  return ended ? { state: 'failed', ended } : { state: 'lost' };
}

/**
 * Gives deliveries back unrun, due again at their `runAt` (their turn under a rate limit): the
 * claim's run no longer counts, and the row says it waits for its turn. Each was judged under the
 * subscription's rateLimit `limit`: one whose subscription has another limit now (lifted or
 * changed since the delivery read it) is due `now` instead, not marked, and asks again under the
 * new one; a postponement written after the change would otherwise keep the old pace, since the
 * change only releases the deliveries no worker holds (`releaseRateLimited`). Returns the ids
 * still held.
 */
const postponeHeld = precompiled<[postponed: string, now: number], { id: string }>((db, postponed, now) => {
  const sameLimit = sql`coalesce((select s.rate_limit from subscriptions s where s.id = n.subscription_id), 0) = p.rate_limit`;
  return sql<{ id: string }>`update notifications as n set run_at = case when ${sameLimit} then p.due_at else cast(${now} as bigint) end,
          postponed = case when ${sameLimit} then 1 else 0 end, lease = null, lease_until = null,
          runs = case when n.runs > 0 then n.runs - 1 else 0 end
        from ${dialectOf(db).records(postponed, 'p', { held_id: 'text', held_lease: 'text', due_at: 'bigint', rate_limit: 'int' })}
        where n.id = p.held_id and n.lease = p.held_lease returning id`;
});

export async function postpone(db: Executor, postponements: ReadonlyArray<{ delivery: Delivery; runAt: number; limit: number }>, now: number): Promise<Set<string>> {
  if (postponements.length === 0) return new Set();
  const rows = await postponeHeld(
    db,
    JSON.stringify(postponements.map(({ delivery, runAt, limit }) => ({ held_id: delivery.id, held_lease: delivery.lease, due_at: Math.round(runAt), rate_limit: limit }))),
    now,
  );
  return new Set(rows.map((row) => row.id));
}

/**
 * The circuit breaker's hold (docs/delivery.md, "Circuit breaker"): gives deliveries back unrun
 * and not due (`run_at` null), marked `held_at`; the claim's run no longer counts. Only while the
 * lease still holds them; the caller has checked, in the same transaction, that their endpoint's
 * circuit is open (and locked it, so that a close cannot pass between the check and this write).
 * Returns the ids held.
 */
const holdHeld = precompiled<[held: string, now: number], { id: string }>(
  (db, heldRows, now) =>
    sql<{ id: string }>`update notifications set run_at = null, held_at = cast(${now} as bigint), lease = null, lease_until = null,
          runs = case when runs > 0 then runs - 1 else 0 end
        where id in (select n.id from notifications n join ${dialectOf(db).records(heldRows, 'h', HELD)} on n.id = h.held_id and n.lease = h.held_lease)
        returning id`,
);

export async function hold(db: Executor, deliveries: readonly Delivery[], now: number): Promise<Set<string>> {
  if (deliveries.length === 0) return new Set();
  return new Set((await holdHeld(db, held(deliveries), now)).map((row) => row.id));
}

// ---------------------------------------------------------------------------------------------
// Writes by others than the holder: never to a delivery in flight.

const releaseWaiting = precompiled<[string | string[], number], { id: string }>(
  (db, ids, now) =>
    sql<{ id: string }>`update notifications set waits_for = null, run_at = case when status = 'pending' then cast(${now} as bigint) else run_at end
          where waits_for is not null and ${dialectOf(db).inList(sql.ref('waits_for'), ids)} returning id`,
);

/**
 * Notification order (docs/delivery.md, "Order"): in the transaction that ended notifications
 * (succeeded, or failed for good), the ones held behind them wait no more, and those still pending
 * are due `now` (a held notification has no lease). One statement for the batch, on the partial
 * index of waiting notifications; none when nothing ended. Answers the ids released.
 */
export async function releaseWaitingFor(db: Executor, endedIds: readonly string[], now: number): Promise<string[]> {
  if (endedIds.length === 0) return [];
  return (await releaseWaiting(db, dialectOf(db).list(endedIds), now)).map((row) => row.id);
}

/**
 * What an endpoint's circuit breaker held goes out (docs/delivery.md, "Circuit breaker"): its
 * `limit` oldest held notifications are due now, oldest first by creation (a held notification has
 * no lease). The probe of an open circuit is one of them (`limit` 1); a closed circuit's held ones
 * are released a window at a time. Answers the ids released, oldest first.
 */
export async function releaseHeld(db: Executor, endpoint: { accountId: string; url: string }, limit: number, now: number): Promise<string[]> {
  if (limit <= 0) return [];
  const oldest = await db
    .selectFrom('notifications')
    .select('id')
    .where('account_id', '=', endpoint.accountId)
    .where('url', '=', endpoint.url)
    .where('held_at', 'is not', null)
    .orderBy('created_at')
    .orderBy('id')
    .limit(limit)
    .execute();
  if (oldest.length === 0) return [];
  const ids = oldest.map((row) => row.id);
  const released = await db
    .updateTable('notifications')
    .set({ held_at: null, run_at: now })
    .where(sql<boolean>`${dialectOf(db).inList(sql.ref('id'), dialectOf(db).list(ids))}`)
    .where('held_at', 'is not', null)
    .where('status', '=', 'pending')
    .returning('id')
    .execute();
  const taken = new Set(released.map((row) => row.id));
  return ids.filter((id) => taken.has(id));
}

/**
 * A manual retry (docs/delivery.md, "Manual retry"): the notification is due now for one extra
 * attempt, whether it waits for its next one, is held (it waits no more), or ended. It writes what
 * that attempt's failure goes back to (`manual_resume_at`, read by the worker's decision): a
 * pending one's automatic attempt when it was due (a held one's: now), an ended one's nothing (0).
 * A second retry before the attempt keeps what the first wrote. One in flight (under a lease that
 * has not ended) is left as it is.
 */
export async function retryNow(db: Executor, id: string, at: number): Promise<void> {
  const resumeAt = sql<number>`case when status <> 'pending' then 0 when manual_resume_at is not null then manual_resume_at else coalesce(run_at, cast(${at} as bigint)) end`;
  await db
    .updateTable('notifications')
    .set({ status: 'pending', completed_at: null, waits_for: null, ...newSchedule(at), updated_at: at, manual_resume_at: resumeAt })
    .where('id', '=', id)
    .where((eb) => eb.or([eb('lease', 'is', null), eb('lease_until', '<=', at)]))
    .execute();
}

/**
 * Recovery (POST /subscriptions/{id}/recover): the notifications of `ids` still failed with
 * completed_at in [since, until) go back to pending, due now for an automatic attempt (a manual
 * retry's mark, left on a row that ended without settling it, is cleared); returns the ids it
 * took. The guard makes concurrent recoveries safe: one that took a row first changed its
 * status, so a second one skips it. A failed notification has no lease.
 *
 * The ids: one list parameter (`StorageDialect.list`). On PostgreSQL `id = any($1::text[])` is
 * planned with the actual array (the primary key, or at worst one pass over the window's part of
 * the partial index), where `id in (select jsonb_array_elements_text($1))`, a subquery estimated
 * at 100 rows, was planned on stale statistics as a nested loop: the whole list read again for
 * every failed row of the window.
 */
const recoverHeld = precompiled<[string | string[], number, number, number], { id: string }>(
  (db, ids, since, until, now) =>
    sql<{ id: string }>`update notifications set status = 'pending', completed_at = null, updated_at = cast(${now} as bigint),
            run_at = cast(${now} as bigint), runs = 0, postponed = 0, lease = null, lease_until = null, manual_resume_at = null
          where ${dialectOf(db).inList(sql.ref('id'), ids)}
            and status = 'failed' and completed_at >= cast(${since} as bigint) and completed_at < cast(${until} as bigint)
          returning id`,
);

export async function recoverFailed(db: Executor, ids: readonly string[], window: { since: number; until: number }, now: number): Promise<string[]> {
  if (ids.length === 0) return [];
  return (await recoverHeld(db, dialectOf(db).list(ids), window.since, window.until, now)).map((row) => row.id);
}

/**
 * A subscription's lifted rate limit (services/rate-limit.ts): its deliveries waiting for their
 * turn under the old limit, and in no worker's hands, are due now (each asks for a turn again).
 * Retries waiting for their retry time are not touched. Returns how many were moved.
 */
export async function releaseRateLimited(db: Executor, subscriptionId: string, now: number): Promise<number> {
  const moved = await db
    .updateTable('notifications')
    .set({ run_at: now, postponed: 0, updated_at: now })
    .where('subscription_id', '=', subscriptionId)
    .where('status', '=', 'pending')
    .where('postponed', '=', 1)
    .where('lease', 'is', null)
    .where('run_at', '>', now)
    .executeTakeFirst();
  return Number(moved.numUpdatedRows);
}

/**
 * A switch-off (auto-disable, in the attempt log's transaction): the subscription's pending
 * deliveries end `failed` with `reason`, except test sends and the ones in flight. A delivery in
 * flight (a lease that has not ended) is left to its holder's settle: its next attempt, if any, is
 * refused (the subscription is inactive) and ends it. One whose lease ended is taken back with the
 * rest (its lease cleared), so a late settle of its old holder writes nothing over the switch-off.
 * Answers the ids ended.
 */
export async function failPendingOf(db: Executor, subscriptionId: string, reason: string, now: number): Promise<string[]> {
  const failed = await db
    .updateTable('notifications')
    .set({ status: 'failed', last_error: reason, updated_at: now, completed_at: now, ...newSchedule(null) })
    .where('subscription_id', '=', subscriptionId)
    .where('status', '=', 'pending')
    .where('test', '=', 0)
    .where((eb) => eb.or([eb('lease', 'is', null), eb('lease_until', '<=', now)]))
    .returning('id')
    .execute();
  return failed.map((row) => row.id);
}

// ---------------------------------------------------------------------------------------------
// Listen copies (docs/delivery.md, "Listen copies"): never due (`run_at` null), so no claim
// takes one; the session's CLI leases them through the API, and settles each with `settleDeliveries`.

export const LISTEN_URL_PREFIX = 'listen:';
/** The delivery log's `url` of a listen session's copies. */
export const listenUrl = (sessionId: string) => `${LISTEN_URL_PREFIX}${sessionId}`;

/**
 * Leases up to `limit` of the session's copies that wait for a CLI (pending, no lease or an ended
 * one), oldest first, under `lease` until `leaseUntil`. The update checks the lease again, so two
 * pollers of one session never both get a copy: on PostgreSQL the second waits for the first's
 * commit and then sees the new lease; SQLite runs one write at a time.
 */
export async function leaseListenCopies(
  db: Executor,
  session: { id: string; accountId: string; createdAt: number },
  lease: string,
  now: number,
  leaseUntil: number,
  limit: number,
): Promise<NotificationsTable[]> {
  const free = sql<boolean>`(lease_until is null or lease_until <= ${now})`;
  const candidates = await db
    .selectFrom('notifications')
    .select('id')
    .where('account_id', '=', session.accountId)
    .where('id', '>=', firstIdAt('msg', session.createdAt))
    .where('url', '=', listenUrl(session.id))
    .where('status', '=', 'pending')
    .where(free)
    .orderBy('id')
    .limit(limit)
    .execute();
  if (candidates.length === 0) return [];
  const taken = await db
    .updateTable('notifications')
    .set({ lease, lease_until: leaseUntil })
    .where(
      'id',
      'in',
      candidates.map((row) => row.id),
    )
    .where('status', '=', 'pending')
    .where(free)
    .returningAll()
    .execute();
  return taken.sort((a, b) => (a.id < b.id ? -1 : 1));
}
