import { sql } from 'kysely';
import { firstIdAt, idTime } from '../domain/ids.js';
import type { Db, Executor } from './database.js';
import { dialectOf } from './dialect.js';

/**
 * The delivery log's periods on PostgreSQL (migration 017; docs/notifications.md, "Retention").
 *
 * `notifications` and `notification_attempts` are partitioned by range of the notification id
 * (`id`, `notification_id`). An id starts with the millisecond it was made at, so a range of ids
 * is a period of creation time: a lookup by id reads one partition, and a period's notifications
 * and their attempts have partitions with the same bounds, made and dropped together.
 *
 * - **Made ahead** (`ensureLogPartitions`, by every process at start and by the worker on each
 *   maintenance tick): partitions for the periods from now to at least one period ahead. Periods
 *   are `logPeriodMs` long and start on multiples of it since the epoch, so every process agrees.
 * - **Nothing waits for them**: a notification with no partition of its own (made while no process
 *   had made its period, or with an id that is not a time) goes to the default partition. A period
 *   whose rows are already there is left to it rather than moved.
 * - **Dropped whole** (`dropExpiredLogPartitions`): a partition whose every id is older than the
 *   retention and that holds no pending notification goes with its attempts partition. One with a
 *   pending notification stays; retention deletes its ended rows one by one (`rowRetentionBound`),
 *   and drops it once nothing in it is pending. So is the default partition handled.
 *
 * Each change is one short transaction that waits at most LOCK_TIMEOUT for its locks (dropping a
 * partition locks the parent table: a long transaction would otherwise queue every reader behind
 * it), and one process at a time makes them; a change that cannot take its locks is tried again on
 * the next tick. SQLite has no partitions: every function here does nothing there.
 */

const PARENTS = { notifications: 'notifications', attempts: 'notification_attempts' } as const;
const DEFAULT_NAME = 'default';
const LOCK_TIMEOUT = '500ms';
/** PostgreSQL's lock_not_available: LOCK_TIMEOUT ran out. */
const LOCK_NOT_AVAILABLE = '55P03';
const DAY_MS = 86_400_000;

/**
 * How full an insert leaves a page of a notifications partition, in percent. A claim rewrites a
 * row with its lease added, and its rows' old versions stay on the page until the claim commits:
 * a page must take a new version of every row on it, each longer by the lease. At half full a
 * batch of short rows (no subscription, a registered-requests body) overflows, and every row that
 * does not fit is a non-HOT update, with an entry in each index. 40 % leaves room for a lease of
 * half a row's length (test/storage/log-partitions.test.ts, "a claim of a full page").
 * Migration 018 sets it on partitions made before.
 */
const NOTIFICATIONS_FILLFACTOR = 40;

/** A period: a quarter of NOTIFICATION_RETENTION (at least 15 s), so a notification is deleted at most a quarter late; 90 days when it is kept for ever. */
export function logPeriodMs(retentionMs: number): number {
  return retentionMs > 0 ? Math.max(Math.floor(retentionMs / 4), 15_000) : 90 * DAY_MS;
}

/** How often the worker makes and drops partitions: twice a period, at most every ten minutes. */
export function logMaintenanceIntervalMs(retentionMs: number): number {
  return Math.max(5_000, Math.min(10 * 60_000, Math.floor(logPeriodMs(retentionMs) / 2)));
}

/** One partition of `notifications`: its name and bounds (from inclusive, to exclusive; null: unbounded), or the default one. */
export interface LogPartition {
  name: string;
  from: string | null;
  to: string | null;
  isDefault: boolean;
}

/** The attempts partition that goes with a notifications partition. */
const attemptsPartitionOf = (name: string) => `${PARENTS.attempts}${name.slice(PARENTS.notifications.length)}`;

/** `notifications_p20261126t120000`: the parent and the UTC second the period starts at. */
const partitionName = (fromMs: number) => `${PARENTS.notifications}_p${new Date(fromMs).toISOString().replace(/[-:]/g, '').slice(0, 15).toLowerCase()}`;

const BOUND = /^FOR VALUES FROM \((MINVALUE|'([^']*)')\) TO \((MAXVALUE|'([^']*)')\)$/;

/** The partitions of `notifications`, in the order of their ranges, the default one last. Empty on SQLite. */
export async function listLogPartitions(db: Db): Promise<LogPartition[]> {
  if (!dialectOf(db).partitionedLog) return [];
  const { rows } = await sql<{ name: string; bound: string }>`select c.relname as name, pg_get_expr(c.relpartbound, c.oid) as bound
      from pg_inherits i join pg_class c on c.oid = i.inhrelid where i.inhparent = ${PARENTS.notifications}::regclass`.execute(db);
  const partitions = rows.map(({ name, bound }): LogPartition => {
    if (bound === 'DEFAULT') return { name, from: null, to: null, isDefault: true };
    const match = BOUND.exec(bound);
    if (!match) throw new Error(`partition ${name} of notifications has bounds this service did not make: ${bound}`);
    return { name, from: match[2] ?? null, to: match[4] ?? null, isDefault: false };
  });
  return partitions.sort((a, b) => Number(a.isDefault) - Number(b.isDefault) || compareFrom(a.from, b.from));
}

/** Compares lower bounds; null (MINVALUE) is below every other. */
function compareFrom(a: string | null, b: string | null): number {
  if (a === b) return 0;
  if (a === null) return -1;
  if (b === null) return 1;
  return a < b ? -1 : 1;
}

/**
 * One change to the partitions: one process at a time per schema (it waits for the other's change,
 * itself bounded), then a transaction that waits at most LOCK_TIMEOUT for each table lock.
 */
async function change<T>(db: Db, work: (tx: Db) => Promise<T>): Promise<T> {
  return db.transaction().execute(async (tx) => {
    const schema = await dialectOf(tx).currentSchema(tx);
    await dialectOf(tx).serialize(tx, `rewards:log-partitions:${schema ?? ''}`);
    await sql`select set_config('lock_timeout', ${LOCK_TIMEOUT}, true)`.execute(tx);
    return work(tx);
  });
}

/**
 * Makes the partitions of the periods from `now` to at least `aheadMs` later (default: one period)
 * that are not there yet, each with its attempts partition. Never one for a period already past:
 * its notifications are in the default partition. Returns the names made.
 */
export async function ensureLogPartitions(db: Db, options: { now: number; periodMs: number; aheadMs?: number }): Promise<string[]> {
  if (!dialectOf(db).partitionedLog) return [];
  const { now, periodMs } = options;
  const until = now + (options.aheadMs ?? periodMs);
  const made: string[] = [];
  // Periods left to the default partition are passed over: the next one starts after them.
  let passed = Math.floor(now / periodMs) * periodMs;
  for (;;) {
    const next = await change(db, async (tx) => {
      const last = (await listLogPartitions(tx)).filter((p) => !p.isDefault).at(-1);
      if (last && last.to === null) return undefined; // an unbounded last partition: nothing can follow it
      const lastEnd = last?.to ? (idTime(last.to) ?? passed) : passed;
      const fromMs = Math.max(lastEnd, passed);
      if (fromMs >= until) return undefined;
      const toMs = (Math.floor(fromMs / periodMs) + 1) * periodMs;
      // Contiguous with the last partition where it ends; otherwise the gap is the default's.
      const from = fromMs === lastEnd && last?.to ? last.to : firstIdAt('msg', fromMs);
      const to = firstIdAt('msg', toMs);
      if (await defaultHolds(tx, from, to)) return { toMs };
      const name = partitionName(fromMs);
      const range = sql`for values from (${sql.lit(from)}) to (${sql.lit(to)})`;
      await sql`create table ${sql.table(name)} partition of ${sql.table(PARENTS.notifications)} ${range} with (fillfactor = ${sql.lit(NOTIFICATIONS_FILLFACTOR)})`.execute(tx);
      await sql`create table ${sql.table(attemptsPartitionOf(name))} partition of ${sql.table(PARENTS.attempts)} ${range}`.execute(tx);
      return { toMs, made: name };
    });
    if (!next) return made;
    if (next.made) made.push(next.made);
    passed = next.toMs;
  }
}

/** A table of a period or of migration 017's legacy rows, attached or not. */
const PERIOD_TABLE = /^(notifications|notification_attempts)_(p\d{8}t\d{6}|legacy)$/;

/** Drops the periods' tables detached but not dropped (a process that stopped between the two). */
async function dropDetached(db: Db): Promise<void> {
  const { rows } = await sql<{ name: string }>`select c.relname as name from pg_class c
      where c.relnamespace = current_schema()::regnamespace and c.relkind = 'r' and not c.relispartition`.execute(db);
  for (const { name } of rows.filter((row) => PERIOD_TABLE.test(row.name))) await sql`drop table if exists ${sql.table(name)}`.execute(db);
}

/** Whether the default partition holds notifications or attempts of [from, to). */
async function defaultHolds(tx: Db, from: string, to: string): Promise<boolean> {
  const { rows } = await sql<{ held: boolean }>`select exists (select 1 from ${sql.table(`${PARENTS.notifications}_${DEFAULT_NAME}`)} where id >= ${from} and id < ${to})
      or exists (select 1 from ${sql.table(`${PARENTS.attempts}_${DEFAULT_NAME}`)} where notification_id >= ${from} and notification_id < ${to}) as held`.execute(tx);
  return rows[0]?.held === true;
}

/**
 * Whether a partition holds a pending notification: `any` reads every row; `due`, those with a
 * schedule, from the partition's `notifications_due_idx` (its predicate, written literally).
 */
export function pendingCheck(partition: string, which: 'any' | 'due') {
  const where = which === 'any' ? sql`status = 'pending'` : sql`status = 'pending' and run_at is not null`;
  return sql<{ pending: boolean }>`select exists (select 1 from ${sql.table(partition)} where ${where}) as pending`;
}

async function holdsPending(db: Executor, partition: string, which: 'any' | 'due'): Promise<boolean> {
  const { rows } = await pendingCheck(partition, which).execute(db);
  return rows[0]?.pending === true;
}

/**
 * Drops, with their attempts partitions, the partitions whose every id is below `beforeId` (made
 * before the retention's cut-off) and that hold no pending notification. Returns what retention
 * must still delete row by row: the ended notifications below `rowsBelow` (those of the partitions
 * kept for a pending one, and the default partition's); the names dropped, and those whose locks
 * were not granted in time (`busy`: left for the next tick).
 */
export async function dropExpiredLogPartitions(db: Db, beforeId: string): Promise<{ dropped: string[]; busy: string[]; rowsBelow: string }> {
  if (!dialectOf(db).partitionedLog) return { dropped: [], busy: [], rowsBelow: beforeId };
  await dropDetached(db);
  const partitions = (await listLogPartitions(db)).filter((p) => !p.isDefault);
  const dropped: string[] = [];
  const busy: string[] = [];
  for (const partition of partitions.filter((p) => p.to !== null && p.to <= beforeId)) {
    // The look at every row goes first, without locks: a period's scan takes seconds, and no reader
    // may wait for it.
    if (await holdsPending(db, partition.name, 'any')) continue;
    const detached = await change(db, async (tx) => {
      // Detaching a partition locks its parent: both parents first (ONLY: not every partition), in
      // one order, so that this cannot deadlock with a statement on a parent that waits for the
      // partition; and while they are held no retry can make one of its notifications pending
      // between the look and the detach. Only catalog rows change: milliseconds. What may have
      // become pending since the look was made so by a retry or a recovery, which both set
      // `run_at`: the due index answers that at once.
      await sql`lock table only ${sql.table(PARENTS.notifications)}, only ${sql.table(PARENTS.attempts)} in access exclusive mode`.execute(tx);
      if (await holdsPending(tx, partition.name, 'due')) return false;
      await sql`alter table ${sql.table(PARENTS.attempts)} detach partition ${sql.table(attemptsPartitionOf(partition.name))}`.execute(tx);
      await sql`alter table ${sql.table(PARENTS.notifications)} detach partition ${sql.table(partition.name)}`.execute(tx);
      return true;
    }).catch((error: unknown) => {
      // A lock not granted within LOCK_TIMEOUT: the next tick tries again.
      if ((error as { code?: unknown }).code === LOCK_NOT_AVAILABLE) return 'busy' as const;
      throw error;
    });
    if (detached === 'busy') busy.push(partition.name);
    else if (detached) {
      // Then dropped on their own: deleting a period's files (gigabytes, seconds) happens at the
      // commit of the drop, with its locks held, and no reader waits for these tables any more.
      await sql`drop table ${sql.table(attemptsPartitionOf(partition.name))}, ${sql.table(partition.name)}`.execute(db);
      dropped.push(partition.name);
    }
  }
  // Row by row, never into a period that is not wholly expired: it goes whole later. The partition
  // unbounded below (an upgraded database's notifications from before migration 017) is not a
  // period: its rows go one by one as they did.
  const kept = partitions.filter((p) => p.from !== null && (p.to === null || p.to > beforeId)).map((p) => p.from!);
  const rowsBelow = [beforeId, ...kept].reduce((low, bound) => (bound < low ? bound : low));
  return { dropped, busy, rowsBelow };
}
