import { sql, type Kysely } from 'kysely';

/**
 * Due jobs by kind. Each worker loop claims its own kinds (the delivery loop one kind, the
 * transactional loop two), and a scan of the run_at index from its low end had to step over
 * every due or just-finished job of the other kinds first. On PostgreSQL the low end is also where
 * deleted and re-leased jobs leave dead entries until vacuum: under a steady flow of requests and
 * deliveries, a delivery claim and the batch lock cost far more than their few jobs warranted
 * (pg_stat_statements showed it). With the kind leading, a claim reads only its kind's
 * range. The run_at index goes: while it existed, PostgreSQL's planner kept choosing it for a
 * one-kind claim, expecting to meet that kind's rows early.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.createIndex('jobs_pending_kind_run_at_idx').on('jobs').columns(['kind', 'run_at']).where(sql.ref('state'), '=', sql.lit('pending')).execute();
  await db.schema.dropIndex('jobs_pending_run_at_idx').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.createIndex('jobs_pending_run_at_idx').on('jobs').column('run_at').where(sql.ref('state'), '=', sql.lit('pending')).execute();
  await db.schema.dropIndex('jobs_pending_kind_run_at_idx').execute();
}
