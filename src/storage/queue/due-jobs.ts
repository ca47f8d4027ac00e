import { sql, type RawBuilder } from 'kysely';
import type { StorageDialect } from '../dialect.js';

/**
 * Up to `limit` due pending jobs of `kinds`, oldest `run_at` first, as the `with` clause of the
 * claim (`claimDueJobs`) and the batch's take (`takeDueJobs`): see `dueWith`.
 *
 * Each kind is read from its own range of `jobs_pending_kind_run_at_idx`: one part per kind, each
 * taking its rows for the transaction (`rowLock`: on PostgreSQL `FOR UPDATE SKIP LOCKED`, so other
 * workers take other jobs; SQLite has one writer, so reading is already exclusive). Parts are named
 * in a `with` and merged in `run_at` order (PostgreSQL refuses a locking clause under UNION); a
 * part's rows beyond what the merge keeps stay locked only until the statement's transaction
 * ends. One part needs no merge. The literal `state = 'pending'` lets both planners use the
 * partial index.
 */
export function dueJobs(options: { kinds: readonly string[]; limit: number; now: number; dialect: StorageDialect }): RawBuilder<unknown> {
  return dueWith({ ...options, table: 'jobs', parts: options.kinds.map((kind) => sql<boolean>`state = 'pending' and kind = ${kind}`) });
}

/** Where due rows are read from: one table, the predicate of each part, and (for `excludeGroups`) its group column and the index of (group, run_at). */
export interface DueSource {
  table: string;
  groups?: { column: string; index: string };
  /** One part per predicate (each a range of a partial index: written as the index's predicate, literally, so both planners use it). */
  parts: readonly RawBuilder<boolean>[];
}

/**
 * Up to `limit` due rows of `source`, oldest `run_at` first, read as `dueJobs` says: each part on
 * its own index range (locked `SKIP LOCKED` on PostgreSQL), merged in `run_at` order; none of
 * `excludeIds` (the claimer's own runs whose lease may have ended: worker/delivery-ownership.ts;
 * usually none, and then the statement does not name it).
 *
 * `excludeGroups` leaves out the rows of those groups (the deliveries of accounts the delivery loop
 * holds enough of). Those groups may have long backlogs, so their rows are not stepped over: the
 * statement reads the ranges of `groups.index` between them instead (one part per range), and
 * costs what the other groups have due, not what the excluded ones have.
 *
 * It is a `with` clause naming them `due` (columns `id`, `run_at`), to start the statement that
 * leases or reads them: `${dueWith(…)} update … where id in (select id from due)`. `due` is
 * MATERIALIZED, read once per statement. As a subquery (`where id in (select … limit n for update
 * skip locked)`) PostgreSQL may plan a nested loop that runs it again for every row it compares, and
 * each run skips the rows the statement has already updated and locks the next ones: a claim of 6
 * leased all 20 due rows (test/storage/deliveries.test.ts forces that plan).
 */
export function dueWith(
  options: DueSource & { limit: number; now: number; dialect: StorageDialect; excludeGroups?: readonly string[] | undefined; excludeIds?: readonly string[] | undefined },
): RawBuilder<unknown> {
  const { limit, dialect } = options;
  if (options.excludeGroups?.length && !options.groups) throw new Error(`${options.table} has no groups to leave out`);
  const ranges = groupRanges(options.excludeGroups ?? []);
  const notIds = options.excludeIds?.length ? sql` and not ${dialect.inList(sql.ref('id'), dialect.list(options.excludeIds))}` : sql``;
  const parts = options.parts.flatMap((predicate) => ranges.map((range) => duePart(options, predicate, range, notIds)));
  if (parts.length === 1) return sql`with due as materialized (${parts[0]!})`;
  const names = parts.map((_, i) => sql.raw(`due_${i}`));
  return sql`with ${sql.join(parts.map((part, i) => sql`${names[i]!} as (${part})`))},
    due as materialized (select id, run_at from (${sql.join(
      names.map((name) => sql`select id, run_at from ${name}`),
      sql` union all `,
    )}) merged order by run_at limit ${limit})`;
}

/** A range of group keys, bounds excluded; undefined bounds are open. `all`: no group condition at all. */
type GroupRange = { all: true } | { all: false; above?: string; below?: string };

/** The ranges between the excluded groups, in byte order: (−∞, e1), (e1, e2) … (ek, +∞); one `all` when none is excluded. */
function groupRanges(excluded: readonly string[]): GroupRange[] {
  if (excluded.length === 0) return [{ all: true }];
  const sorted = [...new Set(excluded)].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  const ranges: GroupRange[] = sorted.map((group, i) => ({ all: false, ...(i > 0 ? { above: sorted[i - 1]! } : {}), below: group }));
  return [...ranges, { all: false, above: sorted.at(-1)! }];
}

function duePart(source: DueSource & { limit: number; now: number; dialect: StorageDialect }, predicate: RawBuilder<boolean>, range: GroupRange, notIds: RawBuilder<unknown>): RawBuilder<unknown> {
  const { dialect, limit, now } = source;
  let table = sql.table(source.table);
  let groups = sql``;
  if (!range.all && source.groups) {
    // Byte order, as groupRanges sorts (and the index is built).
    const key = dialect.byteOrder(source.groups.column);
    groups = sql`${range.above !== undefined ? sql` and ${key} > ${range.above}` : sql``}${range.below !== undefined ? sql` and ${key} < ${range.below}` : sql``}`;
    // SQLite would rather walk the run_at index (no sort) and step over the excluded groups' rows: told which index to use.
    table = dialect.tableUsingIndex(source.table, source.groups.index);
  }
  return sql`select id, run_at from ${table} where ${predicate} and run_at <= cast(${now} as bigint)${groups}${notIds}
    order by run_at limit ${limit}${dialect.rowLock({ skipLocked: true })}`;
}
