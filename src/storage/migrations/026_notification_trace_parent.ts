import type { Kysely } from 'kysely';

/**
 * Traces (docs/deployment.md, "Traces"): a notification keeps the W3C `traceparent` of the span that
 * wrote it (its request's registration or processing), so that every attempt of its delivery, made
 * by whichever worker and however much later, is a span of the request's trace. Written only while
 * traces are on. Nullable without a default: existing notifications read null, and adding the
 * column writes no row on either database, so the previous release runs beside it (it never names
 * the column). On PostgreSQL the column is added to the partitioned parent, which adds it to every
 * partition; the partitions made later (storage/log-partitions.ts) are made with it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('notifications').addColumn('trace_parent', 'text').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('notifications').dropColumn('trace_parent').execute();
}
