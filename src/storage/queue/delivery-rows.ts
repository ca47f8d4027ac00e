import { sql } from 'kysely';
import type { Executor } from '../database.js';
import { dialectOf } from '../dialect.js';
import { precompiled } from '../precompiled.js';
import { prepareStatement } from '../prepared-statements.js';
import type { NotificationsTable } from '../tables/index.js';
import { newLease } from './claim-due-jobs.js';
import { dueWith } from './due-jobs.js';
import { byCreation, retryDelayMs, type ClaimedJob } from './job.js';

/**
 * The delivery queue, on the notification rows themselves (migration 016): a pending notification
 * with a `run_at` is a due delivery; the claim or the hand-off that holds it wrote `lease` and
 * `lease_until` in it (worker/delivery-ownership.ts). The worker sees each as a `ClaimedJob` of
 * kind DELIVERY_KIND whose id is the notification's: one surface for both queues. Every write of
 * a holder is conditional on its lease.
 *
 * What a claim writes (`lease`, `lease_until`, `runs`) is in no index, so on PostgreSQL it is a
 * HOT update wherever its page has room (`NOTIFICATIONS_FILLFACTOR` in storage/log-partitions.ts
 * keeps that room).
 * The claim therefore cannot move `run_at` past the lease as the jobs table does: a leased row
 * stays in the due range and the claim steps over it (`lease_until <= now`), a few hundred rows
 * per worker at most.
 */
export const DELIVERY_KIND = 'deliver-notification';

export interface DeliveryPayload {
  notificationId: string;
}

type DeliveryRow = Pick<NotificationsTable, 'id' | 'account_id' | 'run_at' | 'runs' | 'lease' | 'lease_until' | 'created_at'>;

function toDelivery(row: DeliveryRow, maxRuns: number): ClaimedJob<DeliveryPayload> {
  return {
    id: row.id,
    kind: DELIVERY_KIND,
    payload: { notificationId: row.id },
    runAt: Number(row.run_at),
    attempts: row.runs,
    maxAttempts: maxRuns,
    lastError: null,
    createdAt: Number(row.created_at),
    groupKey: row.account_id,
    lease: row.lease!,
    leaseUntil: Number(row.lease_until),
  };
}

export interface DeliveryClaim {
  workerId: string;
  limit: number;
  leaseMs: number;
  now: number;
  /** Runs without an outcome after which the delivery fails (the job's `maxAttempts`). */
  maxRuns: number;
  /** Accounts holding their share of the worker's slots (a fair claim leaves them out). */
  excludeGroups?: readonly string[];
  /** Deliveries the claimer still runs whose lease may have ended (delivery-ownership.ts, rule 3). */
  excludeIds?: readonly string[];
}

/** The due deliveries: pending, scheduled, due, and not under a lease that still runs. The first two terms are the partial indexes' predicate. */
const dueDelivery = (now: number) => sql<boolean>`status = 'pending' and run_at is not null and (lease_until is null or lease_until <= cast(${now} as bigint))`;

/** Leases up to `limit` due deliveries in one statement, oldest `run_at` first, each counting a run. */
export async function claimDueDeliveries(db: Executor, claim: DeliveryClaim): Promise<ClaimedJob<DeliveryPayload>[]> {
  if (claim.limit <= 0) return [];
  const lease = newLease(claim.workerId);
  const due = dueWith({
    table: 'notifications',
    groupColumn: 'account_id',
    groupIndex: 'notifications_due_account_idx',
    parts: [dueDelivery(claim.now)],
    limit: claim.limit,
    now: claim.now,
    dialect: dialectOf(db),
    excludeGroups: claim.excludeGroups,
    excludeIds: claim.excludeIds,
  });
  const statement = sql<DeliveryRow>`${due} update notifications set lease = ${lease}, lease_until = cast(${claim.now + claim.leaseMs} as bigint), runs = runs + 1
      where id in (select id from due) returning id, account_id, run_at, runs, lease, lease_until, created_at`.compile(db);
  // The plain claim, the loop's usual one, has one text: prepared once per connection. A fair one's
  // text depends on the accounts it leaves out, and is planned each time.
  if (!claim.excludeGroups?.length && !claim.excludeIds?.length) prepareStatement(statement.sql);
  const rows = await db.executeQuery(statement);
  return rows.rows.map((row) => toDelivery(row, claim.maxRuns)).sort(byCreation);
}

const held = (jobs: readonly ClaimedJob[]) => JSON.stringify(jobs.map((job) => ({ held_id: job.id, held_lease: job.lease })));
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

export async function renewDeliveryLeases(db: Executor, jobs: readonly ClaimedJob[], until: number): Promise<number> {
  if (jobs.length === 0) return 0;
  const renewed = new Set((await renewHeld(db, held(jobs), until)).map((row) => row.id));
  for (const job of jobs) if (renewed.has(job.id)) job.leaseUntil = until;
  return renewed.size;
}

/**
 * Lets go of deliveries without an attempt to record: their notification is not pending any more
 * (ended meanwhile, or gone), or it ended without a call. Clears the schedule and the lease of
 * those still held; returns their ids.
 */
const endHeld = precompiled<[held: string], { id: string }>(
  (db, heldRows) =>
    sql<{ id: string }>`update notifications set run_at = null, lease = null, lease_until = null
      where id in (select n.id from notifications n join ${dialectOf(db).records(heldRows, 'h', HELD)} on n.id = h.held_id and n.lease = h.held_lease) returning id`,
);

export async function endHeldDeliveries(db: Executor, jobs: readonly ClaimedJob[]): Promise<Set<string>> {
  if (jobs.length === 0) return new Set();
  return new Set((await endHeld(db, held(jobs))).map((row) => row.id));
}

/**
 * A run that ended without an outcome (the handler threw): due again after the retry delay, or,
 * after `maxAttempts` runs, not scheduled any more ('failed': the caller ends the notification).
 * 'lost' when another worker holds it now (nothing written).
 */
export async function failDeliveryRun(db: Executor, job: ClaimedJob, options: { now: number; retryAt?: number }): Promise<'retrying' | 'failed' | 'lost'> {
  const exhausted = job.attempts >= job.maxAttempts;
  const runAt = exhausted ? null : (options.retryAt ?? options.now + retryDelayMs(job.attempts));
  const result = await db.updateTable('notifications').set({ run_at: runAt, lease: null, lease_until: null }).where('id', '=', job.id).where('lease', '=', job.lease).executeTakeFirst();
  if (Number(result.numUpdatedRows) !== 1) return 'lost';
  return exhausted ? 'failed' : 'retrying';
}

/**
 * Gives deliveries back unrun, due again at their `runAt` (their turn under a rate limit): the
 * claim's run no longer counts, and the row says it waits for its turn. Each was judged under the
 * subscription's rateLimit `limit`: one whose subscription has another limit now (lifted or
 * changed since the delivery read it) is due `now` instead, not marked, and asks again under the
 * new one; a postponement written after the change would otherwise keep the old pace, since the
 * change only releases the deliveries no worker holds (services/rate-limit.ts). Returns the ids
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

export async function postponeDeliveries(db: Executor, postponements: ReadonlyArray<{ job: ClaimedJob; runAt: number; limit: number }>, now: number): Promise<Set<string>> {
  if (postponements.length === 0) return new Set();
  const rows = await postponeHeld(db, JSON.stringify(postponements.map(({ job, runAt, limit }) => ({ held_id: job.id, held_lease: job.lease, due_at: Math.round(runAt), rate_limit: limit }))), now);
  return new Set(rows.map((row) => row.id));
}

/** A hand-off: the lease a batch writes in the notifications it inserts for its worker (see `leaseOffer`). */
export function leasedRow<Row extends NotificationsTable>(row: Row, lease: { token: string; until: number }): Row {
  return { ...row, lease: lease.token, lease_until: lease.until, runs: 1 };
}

/** The delivery a hand-off gives its worker, as a claim would have. */
export function handedOff(row: NotificationsTable, maxRuns: number): ClaimedJob<DeliveryPayload> {
  return toDelivery(row, maxRuns);
}
