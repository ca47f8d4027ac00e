import type { Kysely } from 'kysely';
import { epochMs } from './types.js';

/**
 * Listen sessions (`rewards listen`, docs/receiving-webhooks.md "Webhooks on a laptop"): while one
 * is live (`expires_at` in the future; each poll of its CLI moves it on), every notified outcome
 * of its account also gets a copy for it in the delivery log (url `listen:<id>`, never due: the
 * CLI takes it and forwards it). `events`: JSON array of the events it receives. The table holds
 * only the sessions of developers listening now, and those ended but not yet swept by the worker's
 * maintenance: the worker reads it whole, once a second (docs/delivery.md "Listen copies").
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('listen_sessions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('events', 'text', (c) => c.notNull())
    .addColumn('created_at', epochMs(db), (c) => c.notNull())
    .addColumn('expires_at', epochMs(db), (c) => c.notNull())
    .execute();
  await db.schema.createIndex('listen_sessions_account_idx').on('listen_sessions').column('account_id').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('listen_sessions').execute();
}
