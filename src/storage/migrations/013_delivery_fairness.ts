import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect.js';

/**
 * Fair delivery between accounts (docs/delivery.md, "Fair delivery"):
 * - `jobs.group_key`: the account a delivery job is for. A worker's claim leaves out the jobs of
 *   accounts holding their share of its slots; null for the jobs no account owns (registration and
 *   processing, which are not shared that way). The pending delivery jobs of a live database get
 *   theirs from their notification. Such a claim reads the ranges of `jobs_pending_group_run_at_idx`
 *   between the groups it leaves out, so their backlogs cost it nothing (due-jobs.ts).
 * - Test sends are limited per subscription in a sliding window, counted from the notifications
 *   themselves: a partial index holds only the test sends.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('jobs').addColumn('group_key', 'text').execute();
  const dialect = dialectOf(db);
  await sql`update jobs set group_key = (select n.account_id from notifications n where n.id = ${dialect.jsonField(sql.ref('jobs.payload'), 'notificationId')})
            where kind = 'deliver-notification'`.execute(db);
  // Byte order, the order the claim computes its ranges in, whatever the database's collation.
  await sql`create index jobs_pending_group_run_at_idx on jobs (kind, ${dialect.byteOrder('group_key')}, run_at) where state = 'pending' and group_key is not null`.execute(db);
  await db.schema.createIndex('notifications_test_sends_idx').on('notifications').columns(['subscription_id', 'created_at']).where(sql.ref('test'), '=', sql.lit(1)).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('notifications_test_sends_idx').execute();
  await db.schema.dropIndex('jobs_pending_group_run_at_idx').execute();
  await db.schema.alterTable('jobs').dropColumn('group_key').execute();
}
