import type { Kysely } from 'kysely';

/**
 * When a notification's next attempt is due was kept twice: `notifications.next_attempt_at` and
 * its delivery job's `run_at`. The job is the schedule (the worker claims by it); the column goes,
 * and the delivery log reads the time from the job (`jobs.dedupe_key = 'deliver:' || id`).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('notifications').dropColumn('next_attempt_at').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('notifications').addColumn('next_attempt_at', 'bigint').execute();
}
