import { sql, type Kysely } from 'kysely';

/**
 * Notification order (docs/delivery.md, "Order"): a request's `processed-requests` notification
 * written while the same request's `registered-requests` to the same URL is still pending gets no
 * delivery job; `waits_for` names that registered notification, and is cleared (and the job
 * enqueued) in the transaction that ends it. The partial index finds the waiting ones when a
 * notification ends: it holds only the rows that wait, so it costs nothing in the common case.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('notifications').addColumn('waits_for', 'text').execute();
  await db.schema.createIndex('notifications_waits_for_idx').on('notifications').column('waits_for').where(sql.ref('waits_for'), 'is not', null).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('notifications_waits_for_idx').execute();
  await db.schema.alterTable('notifications').dropColumn('waits_for').execute();
}
