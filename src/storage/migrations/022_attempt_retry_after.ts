import type { Kysely } from 'kysely';

/**
 * Each attempt of the delivery log keeps the `Retry-After` header the receiver answered with
 * (`retry_after`: the value as received, its first 256 characters), so the log shows why a retry
 * came later than RETRY_INTERVAL (docs/delivery.md, "Success and retries"). It is written by the
 * statement that logs the attempt anyway, and is null for nearly every attempt (most answers carry
 * no Retry-After). Nullable without a default: existing attempts read null, and adding the column
 * writes no row on either database. On PostgreSQL the column is added to the partitioned parent
 * (migration 017), which adds it to every partition, and the partitions made later
 * (storage/log-partitions.ts) are made with it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('notification_attempts').addColumn('retry_after', 'text').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('notification_attempts').dropColumn('retry_after').execute();
}
