import type { Kysely } from 'kysely';

/**
 * Each attempt of the delivery log keeps the headers of the call it made (`request_headers`:
 * compact JSON, secrets masked before they are stored, docs/notifications.md "Delivery log API"),
 * so the log shows what the receiver was sent rather than what would be sent now. Nullable without
 * a default: existing attempts read null, and adding the column writes no row on either database.
 * On PostgreSQL the column is added to the partitioned parent (migration 017), which adds it to
 * every partition, and the partitions made later (storage/log-partitions.ts) are made with it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('notification_attempts').addColumn('request_headers', 'text').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('notification_attempts').dropColumn('request_headers').execute();
}
