import type { Kysely } from 'kysely';
import { epochMs } from './types.js';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('accounts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull().unique())
    .addColumn('is_operator', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('active', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('created_at', epochMs(db), (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('oauth_clients')
    .addColumn('client_id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('scopes', 'text', (c) => c.notNull())
    .addColumn('secret_hash', 'text', (c) => c.notNull())
    .addColumn('previous_secret_hash', 'text')
    .addColumn('previous_secret_expires_at', epochMs(db))
    .addColumn('active', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('created_at', epochMs(db), (c) => c.notNull())
    .addColumn('updated_at', epochMs(db), (c) => c.notNull())
    .execute();
  await db.schema.createIndex('oauth_clients_account_idx').on('oauth_clients').column('account_id').execute();

  await db.schema
    .createTable('signing_keys')
    .addColumn('kid', 'text', (c) => c.primaryKey())
    .addColumn('algorithm', 'text', (c) => c.notNull())
    .addColumn('public_jwk', 'text', (c) => c.notNull())
    .addColumn('private_key_encrypted', 'text', (c) => c.notNull())
    .addColumn('created_at', epochMs(db), (c) => c.notNull())
    .addColumn('retired_at', epochMs(db))
    .addColumn('expires_at', epochMs(db))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('signing_keys').execute();
  await db.schema.dropTable('oauth_clients').execute();
  await db.schema.dropTable('accounts').execute();
}
