import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect.js';
import { epochMs } from './types.js';

/** The note a postponed delivery job carried (services/rate-limit.ts, as it was written). */
const WAITING_FOR_RATE_LIMIT = 'waiting for its turn under the subscription rateLimit';

/**
 * The notification row is its own delivery job (docs/notifications.md, "One row per delivery"): the
 * `deliver-notification` jobs go, and each notification carries its schedule and its lease.
 * - `run_at`: when its next attempt is due; null once it ended, and while it is held behind another
 *   (`waits_for`). The due index and the fair claim's per-account index read it.
 * - `lease`, `lease_until`: the token of the claim or hand-off that holds it and when that ends
 *   (delivery-ownership.ts). A claim writes only these and `runs`, none of them indexed, so on
 *   PostgreSQL it is a HOT update where the page has room: `fillfactor` leaves half of each page free.
 * - `runs`: runs that ended without an outcome (DELIVERY_RUNS_WITHOUT_OUTCOME), what the job's
 *   `attempts` counted.
 * - `postponed`: 1 while it waits for its turn under its subscription's rateLimit (what the job's
 *   `last_error` note said), so that lifting the limit finds it and not the retries.
 *
 * A live database's pending delivery jobs move into their rows: due when the job was (a job leased
 * to a worker is due when its lease ends, as it was), with the runs it had counted. Dead delivery
 * jobs (failed) only recorded what the notification already says. Stop the workers before
 * upgrading: a delivery in flight across the upgrade is sent again after its lease, same webhook-id.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const dialect = dialectOf(db);
  await db.schema.alterTable('notifications').addColumn('run_at', epochMs(db)).execute();
  await db.schema.alterTable('notifications').addColumn('lease', 'text').execute();
  await db.schema.alterTable('notifications').addColumn('lease_until', epochMs(db)).execute();
  await db.schema
    .alterTable('notifications')
    .addColumn('runs', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('notifications')
    .addColumn('postponed', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  const job = (column: string) => sql`(select j.${sql.raw(column)} from jobs j where j.dedupe_key = 'deliver:' || notifications.id and j.state = 'pending')`;
  await sql`update notifications set run_at = ${job('run_at')}, runs = coalesce(${job('attempts')}, 0),
              postponed = case when ${job('last_error')} = ${WAITING_FOR_RATE_LIMIT} then 1 else 0 end
            where status = 'pending'`.execute(db);
  await sql`delete from jobs where kind = 'deliver-notification'`.execute(db);
  await db.schema
    .createIndex('notifications_due_idx')
    .on('notifications')
    .column('run_at')
    .where(sql<boolean>`status = 'pending' and run_at is not null`)
    .execute();
  // Byte order, the order a fair claim computes its ranges of accounts in (due-jobs.ts).
  await sql`create index notifications_due_account_idx on notifications (${dialect.byteOrder('account_id')}, run_at) where status = 'pending' and run_at is not null`.execute(db);
  await dialect.setFillFactor(db, 'notifications', 50);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('notifications_due_account_idx').execute();
  await db.schema.dropIndex('notifications_due_idx').execute();
  await sql`insert into jobs (id, kind, payload, state, run_at, attempts, max_attempts, dedupe_key, group_key, created_at, updated_at)
            select 'job_' || id, 'deliver-notification', '{"notificationId":"' || id || '"}', 'pending', run_at, runs, 20, 'deliver:' || id, account_id, created_at, updated_at
            from notifications where status = 'pending' and run_at is not null`.execute(db);
  for (const column of ['postponed', 'runs', 'lease_until', 'lease', 'run_at']) await db.schema.alterTable('notifications').dropColumn(column).execute();
}
