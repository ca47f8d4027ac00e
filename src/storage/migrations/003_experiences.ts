import type { Kysely } from 'kysely';
import { epochMs } from './types.js';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('experiences')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('active', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('events', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('created_at', epochMs(db), (c) => c.notNull())
    .addColumn('updated_at', epochMs(db), (c) => c.notNull())
    .addUniqueConstraint('experiences_account_name_unique', ['account_id', 'name'])
    .execute();

  await db.schema
    .createTable('prizes')
    .addColumn('experience_id', 'text', (c) => c.notNull().references('experiences.id').onDelete('cascade'))
    .addColumn('id', 'text', (c) => c.notNull())
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('bucket', 'text', (c) => c.notNull())
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('value', 'double precision', (c) => c.notNull())
    .addColumn('quantity', 'integer', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('stock', 'integer')
    .addPrimaryKeyConstraint('prizes_pk', ['experience_id', 'id'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('prizes').execute();
  await db.schema.dropTable('experiences').execute();
}
