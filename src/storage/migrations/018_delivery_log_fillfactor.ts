import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect.js';

/**
 * PostgreSQL: every partition of `notifications` leaves 60 % of each page free instead of 50 %, as
 * the partitions made from now on do (`NOTIFICATIONS_FILLFACTOR` in storage/log-partitions.ts
 * says why: a claim of a full page of short rows was not HOT for every row). It applies to the
 * pages written from now on; nothing is rewritten, and the lock it takes lets reads and writes on.
 * The value is written here, not imported: a migration does the same thing whenever it runs.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await setOnPartitions(db, 40);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await setOnPartitions(db, 50);
}

async function setOnPartitions(db: Kysely<unknown>, percent: number): Promise<void> {
  if (!dialectOf(db).partitionedLog) return;
  const { rows } = await sql<{ name: string }>`select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
      where i.inhparent = 'notifications'::regclass order by 1`.execute(db);
  for (const { name } of rows) await sql`alter table ${sql.table(name)} set (fillfactor = ${sql.lit(percent)})`.execute(db);
}
