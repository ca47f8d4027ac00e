import { sql, type Kysely } from 'kysely';

/**
 * The delivery log's failed notifications per account, newest first (`GET /notifications?status=failed`,
 * docs/notifications.md "Delivery log API"): a partial index on `(account_id, id)` that holds only
 * the rows whose status is `failed`.
 *
 * Without it that list walked `notifications_account_idx` from the newest notification and kept
 * the failed ones: an account with fewer failed notifications than a page (a healthy one) had its
 * whole log read for each page. `notifications_subscription_failed_idx` serves one subscription
 * (and recovery's order, by completion time), not an account, nor a request's own callback URLs.
 *
 * What it costs: nothing when a notification is written (it is written pending) nor when it
 * succeeds; one entry when it ends failed, an update that already writes a new entry in every
 * index of the table (its status changes, so it is never HOT). Building it reads the log once; on
 * PostgreSQL writes to the log wait for the build (the index is made on every partition of the
 * partitioned table, migration 017, and on the partitions made later).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.createIndex('notifications_account_failed_idx').on('notifications').columns(['account_id', 'id']).where(sql.ref('status'), '=', sql.lit('failed')).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('notifications_account_failed_idx').execute();
}
