import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect.js';

/**
 * The jobs table keeps the transactional work only (request registration and processing): the
 * columns that served deliveries while they were jobs go — `dedupe_key` (one delivery job per
 * notification) and `group_key` with `jobs_pending_group_run_at_idx` (the account, for fair claims).
 * Deliveries have been their notification rows since migration 016.
 *
 * PostgreSQL drops the columns in place (the unique index of `dedupe_key` goes with it). SQLite
 * cannot drop a UNIQUE column: the table is rebuilt, in this migration's transaction, with its
 * rows and its one remaining index. Jobs are few at any time (the pending ones of the moment), so
 * the copy is short.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('jobs_pending_group_run_at_idx').ifExists().execute();
  if (dialectOf(db).dropsUniqueColumns) {
    await sql`alter table jobs drop column dedupe_key, drop column group_key`.execute(db);
    return;
  }
  const columns = sql.raw('id, kind, payload, state, run_at, attempts, max_attempts, locked_by, locked_at, last_error, created_at, updated_at');
  await sql`create table jobs_rebuilt (id text primary key, kind text not null, payload text not null, state text not null default 'pending',
      run_at integer not null, attempts integer not null default 0, max_attempts integer not null, locked_by text, locked_at integer,
      last_error text, created_at integer not null, updated_at integer not null)`.execute(db);
  await sql`insert into jobs_rebuilt (${columns}) select ${columns} from jobs`.execute(db);
  await sql`drop table jobs`.execute(db);
  await sql`alter table jobs_rebuilt rename to jobs`.execute(db);
  await db.schema.createIndex('jobs_pending_kind_run_at_idx').on('jobs').columns(['kind', 'run_at']).where(sql.ref('state'), '=', sql.lit('pending')).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('jobs').addColumn('dedupe_key', 'text').execute();
  await db.schema.createIndex('jobs_dedupe_key_idx').unique().on('jobs').column('dedupe_key').execute();
  await db.schema.alterTable('jobs').addColumn('group_key', 'text').execute();
  await sql`create index jobs_pending_group_run_at_idx on jobs (kind, ${dialectOf(db).byteOrder('group_key')}, run_at) where state = 'pending' and group_key is not null`.execute(db);
}
