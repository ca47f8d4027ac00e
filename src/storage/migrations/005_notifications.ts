import type { Kysely } from 'kysely';
import { epochMs } from './types.js';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('notifications')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('request_id', 'text', (c) => c.notNull())
    .addColumn('subscription_id', 'text')
    .addColumn('event', 'text', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempt_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_at', epochMs(db))
    .addColumn('last_status_code', 'integer')
    .addColumn('last_error', 'text')
    .addColumn('created_at', epochMs(db), (c) => c.notNull())
    .addColumn('updated_at', epochMs(db), (c) => c.notNull())
    .addColumn('completed_at', epochMs(db))
    .execute();
  // The delivery log is read per account, newest first, optionally by request or subscription.
  await db.schema.createIndex('notifications_account_idx').on('notifications').columns(['account_id', 'id']).execute();
  await db.schema.createIndex('notifications_request_idx').on('notifications').columns(['request_id']).execute();

  await db.schema
    .createTable('notification_attempts')
    .addColumn('notification_id', 'text', (c) => c.notNull().references('notifications.id').onDelete('cascade'))
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('started_at', epochMs(db), (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('status_code', 'integer')
    .addColumn('latency_ms', 'integer', (c) => c.notNull())
    .addColumn('response_body', 'text')
    .addColumn('error', 'text')
    .addColumn('outcome', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('notification_attempts_pk', ['notification_id', 'attempt'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('notification_attempts').execute();
  await db.schema.dropTable('notifications').execute();
}
