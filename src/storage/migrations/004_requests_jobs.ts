import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect.js';
import { epochMs } from './types.js';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('requests')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('experience', 'text', (c) => c.notNull())
    .addColumn('event', 'text')
    .addColumn('data', 'text')
    .addColumn('registered_callback_url', 'text')
    .addColumn('processed_callback_url', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('reward_value', 'integer')
    .addColumn('error_code', 'text')
    .addColumn('message', 'text')
    .addColumn('experience_snapshot', 'text')
    .addColumn('delivered', 'text')
    .addColumn('canceled', 'text')
    .addColumn('created_at', epochMs(db), (c) => c.notNull())
    .addColumn('updated_at', epochMs(db), (c) => c.notNull())
    .addColumn('registered_at', epochMs(db))
    .addColumn('concluded_at', epochMs(db))
    .execute();
  await db.schema.createIndex('requests_account_created_idx').on('requests').columns(['account_id', 'created_at']).execute();

  // A global sequence orders events in the order they were recorded ("oldest first").
  const serial = dialectOf(db).serialKey;
  await db.schema
    .createTable('request_events')
    .addColumn('seq', serial.type, (c) => (serial.autoIncrement ? c.primaryKey().autoIncrement() : c.primaryKey()))
    .addColumn('request_id', 'text', (c) => c.notNull().references('requests.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('ref_id', 'text', (c) => c.notNull())
    .addColumn('experience', 'text', (c) => c.notNull())
    .addColumn('data', 'text')
    .addColumn('created_at', epochMs(db), (c) => c.notNull())
    // Partner posts are idempotent on (request, name, refId).
    .addUniqueConstraint('request_events_request_name_ref_unique', ['request_id', 'name', 'ref_id'])
    .execute();

  await db.schema
    .createTable('idempotency_keys')
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('body_hash', 'text', (c) => c.notNull())
    .addColumn('response_status', 'integer', (c) => c.notNull())
    .addColumn('response_body', 'text', (c) => c.notNull())
    .addColumn('response_location', 'text')
    .addColumn('created_at', epochMs(db), (c) => c.notNull())
    .addColumn('expires_at', epochMs(db), (c) => c.notNull())
    .addPrimaryKeyConstraint('idempotency_keys_pk', ['account_id', 'key'])
    .execute();
  await db.schema.createIndex('idempotency_keys_expires_idx').on('idempotency_keys').column('expires_at').execute();

  await db.schema
    .createTable('jobs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull().defaultTo('pending'))
    .addColumn('run_at', epochMs(db), (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('max_attempts', 'integer', (c) => c.notNull())
    .addColumn('locked_by', 'text')
    .addColumn('locked_at', epochMs(db))
    .addColumn('last_error', 'text')
    .addColumn('dedupe_key', 'text', (c) => c.unique())
    .addColumn('created_at', epochMs(db), (c) => c.notNull())
    .addColumn('updated_at', epochMs(db), (c) => c.notNull())
    .execute();
  // Claiming scans due pending jobs in run_at order; the partial index keeps that O(batch)
  // however many jobs wait in the future or lie dead in state 'failed'.
  await db.schema.createIndex('jobs_pending_run_at_idx').on('jobs').column('run_at').where(sql.ref('state'), '=', sql.lit('pending')).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('jobs').execute();
  await db.schema.dropTable('idempotency_keys').execute();
  await db.schema.dropTable('request_events').execute();
  await db.schema.dropTable('requests').execute();
}
