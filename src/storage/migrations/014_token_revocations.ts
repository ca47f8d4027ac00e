import { sql, type Kysely } from 'kysely';
import { epochMs } from './types.js';

/**
 * Token revocations (docs/tokens.md, "Deactivation"): what every API process must refuse among
 * tokens that verify, one row per account, OAuth client or console link whose tokens are cut.
 * Written in the transaction of the change it reflects (a deactivation, a reactivation, a deleted
 * client, a revoked console link); each process loads the table once and then reads the rows
 * whose `changed_at` moved, every AUTH_REFRESH_INTERVAL (the index serves that read).
 *
 * - `refused`: every token of the subject is refused, and why (`deactivated`, `deleted`, `revoked`);
 *   null once it is active again.
 * - `issued_before`: tokens issued (`iat`) before this instant are refused: set when the subject is
 *   reactivated, so that tokens from before its deactivation do not come back with it.
 * - `expires_at`: after it no token the row refuses can still be valid, and it is deleted; null
 *   while the row holds (an inactive account or client).
 *
 * Accounts and clients that are inactive when this migration runs get their row here.
 * `console_links.revoked_at`: an operator revoked the link (its code cannot be exchanged, its
 * session's token is refused).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('token_revocations')
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('subject_id', 'text', (c) => c.notNull())
    .addColumn('refused', 'text')
    .addColumn('issued_before', epochMs(db))
    .addColumn('changed_at', epochMs(db), (c) => c.notNull())
    .addColumn('expires_at', epochMs(db))
    .addPrimaryKeyConstraint('token_revocations_pk', ['kind', 'subject_id'])
    .execute();
  await db.schema.createIndex('token_revocations_changed_idx').on('token_revocations').column('changed_at').execute();
  const now = Date.now();
  await sql`insert into token_revocations (kind, subject_id, refused, changed_at)
            select 'account', id, 'deactivated', ${now} from accounts where active = 0`.execute(db);
  await sql`insert into token_revocations (kind, subject_id, refused, changed_at)
            select 'client', client_id, 'deactivated', ${now} from oauth_clients where active = 0`.execute(db);
  await db.schema.alterTable('console_links').addColumn('revoked_at', epochMs(db)).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('console_links').dropColumn('revoked_at').execute();
  await db.schema.dropTable('token_revocations').execute();
}
