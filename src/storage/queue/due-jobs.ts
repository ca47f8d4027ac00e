import { sql, type RawBuilder } from 'kysely';

/**
 * The ids of up to `limit` due pending jobs of `kinds`, oldest `run_at` first, as a subquery for
 * the claim (`claimDueJobs`) and the batch's take (`takeDueJobs`).
 *
 * Each kind is read from its own range of `jobs_pending_kind_run_at_idx`. On PostgreSQL that is
 * one locking CTE per kind (`FOR UPDATE SKIP LOCKED`: other workers take other jobs; PostgreSQL
 * refuses a locking clause under UNION), merged in `run_at` order; a kind's rows beyond what the
 * merge keeps stay locked only until the statement's transaction ends. One kind needs no merge.
 * SQLite has one writer, so the plain query is already exclusive, and it deletes index entries at
 * once instead of leaving dead ones behind. The literal `state = 'pending'` lets both planners use
 * the partial index.
 *
 * `excludeGroups` leaves out the jobs of those groups (a fair claim: docs/delivery.md, "Fair
 * delivery"); the scan then steps over their due rows, which costs only while a group holds its
 * share. Without it the statement is the plain one.
 */
export function dueJobIds(options: { kinds: readonly string[]; limit: number; now: number; postgres: boolean; excludeGroups?: readonly string[] | undefined }): RawBuilder<{ id: string }> {
  const { kinds, limit, now } = options;
  const excluded = options.excludeGroups ?? [];
  const notExcluded =
    excluded.length === 0
      ? sql``
      : options.postgres
        ? sql` and (group_key is null or group_key <> all(${[...excluded]}::text[]))`
        : sql` and (group_key is null or group_key not in (select value from json_each(${JSON.stringify(excluded)})))`;
  if (!options.postgres) {
    return sql`select id from jobs where state = 'pending' and run_at <= ${now} and kind in (${sql.join(kinds.map((kind) => sql`${kind}`))})${notExcluded} order by run_at limit ${limit}`;
  }
  const ofKind = (kind: string) =>
    sql`select id, run_at from jobs where state = 'pending' and kind = ${kind} and run_at <= ${now}::bigint${notExcluded} order by run_at limit ${limit} for update skip locked`;
  if (kinds.length === 1) return sql`select id from (${ofKind(kinds[0]!)}) due`;
  const names = kinds.map((_, i) => sql.raw(`due_${i}`));
  return sql`with ${sql.join(kinds.map((kind, i) => sql`${names[i]!} as (${ofKind(kind)})`))}
    select id from (${sql.join(
      names.map((name) => sql`select id, run_at from ${name}`),
      sql` union all `,
    )}) due order by run_at limit ${limit}`;
}
