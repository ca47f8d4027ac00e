import type { Kysely } from 'kysely';
import { epochMs } from './types.js';

/**
 * Console links (docs/console.md, "Signing in"): one-time codes an operator hands to a client
 * business's developer, exchanged once at the token endpoint for an access token of the account.
 * Only the SHA-256 of a code is stored (`code_hash`, unique: the exchange looks it up by it).
 * `token_ttl_ms` is the lifetime of the token the code grants; `used_at` is set by the one
 * exchange that wins.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('console_links')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('code_hash', 'text', (c) => c.notNull().unique())
    .addColumn('created_at', epochMs(db), (c) => c.notNull())
    .addColumn('expires_at', epochMs(db), (c) => c.notNull())
    .addColumn('token_ttl_ms', epochMs(db), (c) => c.notNull())
    .addColumn('used_at', epochMs(db))
    .execute();
  await db.schema.createIndex('console_links_account_idx').on('console_links').column('account_id').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('console_links').execute();
}
