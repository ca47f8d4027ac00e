import { sql, type Kysely } from 'kysely';
import { firstIdAt } from '../../domain/ids.js';
import { dialectOf } from '../dialect.js';

/**
 * PostgreSQL: the delivery log, `notifications` and `notification_attempts`, becomes partitioned
 * by range of the notification id, that is by period of creation (storage/log-partitions.ts), so
 * that retention drops whole periods instead of deleting rows. SQLite is left as it is.
 *
 * A live database is not copied: each table becomes the first partition of its new parent, for
 * every id made before this migration ran (`from (minvalue) to (<now>)`). Attaching it reads it
 * once to check its ids (no rewrite), and its indexes become the partition's own. Rows with ids
 * above that bound (ids that are not times, written by hand) go to the default partition. The
 * attempts lose their foreign key: retention deletes them with their notification, or drops
 * their partition with the notifications'. The periods' partitions are made by the processes
 * (`ensureLogPartitions`), which know NOTIFICATION_RETENTION.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  if (!dialectOf(db).partitionedLog) return;
  const before = firstIdAt('msg', Date.now());

  // First of all the attempts' foreign key: moving a notification would delete its attempts.
  const { rows: keys } = await sql<{ name: string }>`select conname as name from pg_constraint where conrelid = 'notification_attempts'::regclass and contype = 'f'`.execute(db);
  for (const { name } of keys) await sql`alter table notification_attempts drop constraint ${sql.id(name)}`.execute(db);

  await asLegacy(db, 'notifications');
  await sql`create table notifications (like notifications_legacy including defaults) partition by range (id)`.execute(db);
  await sql`alter table notifications add constraint notifications_pkey primary key (id)`.execute(db);
  await createIndexesLike(db, 'notifications_legacy', 'notifications');
  await sql`create table notifications_default partition of notifications default with (fillfactor = 50)`.execute(db);
  await sql`with moved as (delete from notifications_legacy where id >= ${before} returning *) insert into notifications select * from moved`.execute(db);
  await sql`alter table notifications attach partition notifications_legacy for values from (minvalue) to (${sql.lit(before)})`.execute(db);

  await asLegacy(db, 'notification_attempts');

  await sql`create table notification_attempts (like notification_attempts_legacy including defaults) partition by range (notification_id)`.execute(db);
  await sql`alter table notification_attempts add constraint notification_attempts_pk primary key (notification_id, attempt)`.execute(db);
  await sql`create table notification_attempts_default partition of notification_attempts default`.execute(db);
  await sql`with moved as (delete from notification_attempts_legacy where notification_id >= ${before} returning *) insert into notification_attempts select * from moved`.execute(db);
  await sql`alter table notification_attempts attach partition notification_attempts_legacy for values from (minvalue) to (${sql.lit(before)})`.execute(db);
}

/** Renames `table` to `<table>_legacy`, its primary key constraint and its indexes too (the parent takes their names). */
async function asLegacy(db: Kysely<unknown>, table: string): Promise<void> {
  const legacy = `${table}_legacy`;
  await sql`alter table ${sql.table(table)} rename to ${sql.table(legacy)}`.execute(db);
  const { rows } = await sql<{ name: string; constraint: boolean }>`select i.relname as name, exists (select 1 from pg_constraint c where c.conindid = i.oid) as constraint
      from pg_index x join pg_class i on i.oid = x.indexrelid where x.indrelid = ${legacy}::regclass`.execute(db);
  for (const { name, constraint } of rows) {
    if (constraint) await sql`alter table ${sql.table(legacy)} rename constraint ${sql.id(name)} to ${sql.id(`${name}_legacy`)}`.execute(db);
    else await sql`alter index ${sql.id(name)} rename to ${sql.id(`${name}_legacy`)}`.execute(db);
  }
}

/** Creates on `target` every index of `source` but those of a constraint, under the name it had before `asLegacy` (or `rename`). */
async function createIndexesLike(db: Kysely<unknown>, source: string, target: string, rename = (name: string) => name.replace(/_legacy$/, '')): Promise<void> {
  const { rows } = await sql<{ name: string; definition: string }>`select i.relname as name, pg_get_indexdef(i.oid) as definition
      from pg_index x join pg_class i on i.oid = x.indexrelid
      where x.indrelid = ${source}::regclass and not exists (select 1 from pg_constraint c where c.conindid = i.oid)`.execute(db);
  for (const { name, definition } of rows) {
    // "CREATE INDEX <name> ON <schema>.<source> USING …": the same on the target, under its name.
    const using = definition.slice(definition.indexOf(' USING '));
    const unique = definition.startsWith('CREATE UNIQUE') ? sql`unique ` : sql``;
    await sql`create ${unique}index ${sql.id(rename(name))} on ${sql.table(target)}${sql.raw(using)}`.execute(db);
  }
}

/** Back to plain tables: the rows are copied (the partitions dropped), the indexes and the attempts' foreign key made again. */
export async function down(db: Kysely<unknown>): Promise<void> {
  if (!dialectOf(db).partitionedLog) return;
  for (const [table, key] of [
    ['notifications', 'notifications_pkey primary key (id)'],
    ['notification_attempts', 'notification_attempts_pk primary key (notification_id, attempt)'],
  ] as const) {
    await sql`create table ${sql.table(`${table}_plain`)} (like ${sql.table(table)} including defaults)`.execute(db);
    await sql`insert into ${sql.table(`${table}_plain`)} select * from ${sql.table(table)}`.execute(db);
    await sql`alter table ${sql.table(table)} rename to ${sql.table(`${table}_partitioned`)}`.execute(db);
    await sql`alter table ${sql.table(`${table}_plain`)} rename to ${sql.table(table)}`.execute(db);
    const [name, ...definition] = key.split(' ');
    await sql`alter table ${sql.table(`${table}_partitioned`)} rename constraint ${sql.id(name!)} to ${sql.id(`${name!}_partitioned`)}`.execute(db);
    await sql`alter table ${sql.table(table)} add constraint ${sql.id(name!)} ${sql.raw(definition.join(' '))}`.execute(db);
  }
  const { rows } = await sql<{ name: string }>`select i.relname as name from pg_index x join pg_class i on i.oid = x.indexrelid
      where x.indrelid = 'notifications_partitioned'::regclass and not exists (select 1 from pg_constraint c where c.conindid = i.oid)`.execute(db);
  for (const { name } of rows) await sql`alter index ${sql.id(name)} rename to ${sql.id(`${name}_partitioned`)}`.execute(db);
  await createIndexesLike(db, 'notifications_partitioned', 'notifications', (name) => name.replace(/_partitioned$/, ''));
  await sql`drop table notification_attempts_partitioned, notifications_partitioned`.execute(db);
  await sql`alter table notification_attempts add foreign key (notification_id) references notifications (id) on delete cascade`.execute(db);
  await sql`alter table notifications set (fillfactor = 50)`.execute(db);
}
