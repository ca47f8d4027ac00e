import type { Kysely } from 'kysely';

/**
 * Notification order (docs/delivery.md, "Order"): `has_waiters` is 1 on a registered-requests
 * notification that a processed-requests one was held behind, set by the transaction that held it
 * (which has the row locked). The statement that ends notifications returns the flag, so the
 * release runs only for the ones something waits for: nothing extra when nothing waits, which is
 * nearly always.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('notifications')
    .addColumn('has_waiters', 'integer', (column) => column.notNull().defaultTo(0))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('notifications').dropColumn('has_waiters').execute();
}
