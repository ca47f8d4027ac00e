import type { Kysely } from 'kysely';
import { epochMs } from './types.js';

/**
 * A manual retry (POST /notifications/{id}/retry) is an extra attempt: it uses none of the
 * delivery's automatic attempts and does not move their schedule (docs/delivery.md, "Manual
 * retry"). Two columns of the notification row carry that:
 * - `manual_attempts`: the attempts manual retries made, left out of RETRY_MAX_ATTEMPTS;
 * - `manual_resume_at`: written by the retry, cleared by the settle of its attempt: when the
 *   automatic attempts resume should the manual one fail, or 0 for a delivery that had ended.
 * Nullable without a default (null: none, the case of nearly every row): existing rows are not
 * written, a new row is not one byte longer, and on PostgreSQL the column is added to the
 * partitioned parent and so to every partition (migration 017).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('notifications').addColumn('manual_attempts', 'integer').execute();
  await db.schema.alterTable('notifications').addColumn('manual_resume_at', epochMs(db)).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('notifications').dropColumn('manual_resume_at').execute();
  await db.schema.alterTable('notifications').dropColumn('manual_attempts').execute();
}
