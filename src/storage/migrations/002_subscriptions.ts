import { sql, type Kysely } from 'kysely';
import { epochMs } from './types.js';

/**
 * Webhook subscriptions and the Standard Webhooks signing secrets that sign their deliveries.
 *
 * `webhook_signing_secrets` holds both kinds of secret: a subscription's (subscription_id set) and
 * an account's default for per-request callback URLs (subscription_id null). A secret with
 * expires_at null is the current one; rotation gives the old one an expiry, so "every secret
 * that may sign for X now" is one indexed query: owner = X and (expires_at is null or > now).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('subscriptions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('event', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('active', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('experiences', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('callback_url', 'text', (c) => c.notNull())
    .addColumn('callback_authorization_encrypted', 'text')
    .addColumn('callback_custom_headers', 'text', (c) => c.notNull().defaultTo('{}'))
    .addColumn('created_at', epochMs(db), (c) => c.notNull())
    .addColumn('updated_at', epochMs(db), (c) => c.notNull())
    .execute();
  await db.schema.createIndex('subscriptions_account_event_idx').on('subscriptions').columns(['account_id', 'event']).execute();

  await db.schema
    .createTable('webhook_signing_secrets')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('subscription_id', 'text', (c) => c.references('subscriptions.id').onDelete('cascade'))
    .addColumn('secret_encrypted', 'text', (c) => c.notNull())
    .addColumn('created_at', epochMs(db), (c) => c.notNull())
    .addColumn('expires_at', epochMs(db))
    .execute();
  await db.schema.createIndex('webhook_signing_secrets_owner_idx').on('webhook_signing_secrets').columns(['account_id', 'subscription_id']).execute();
  await db.schema.createIndex('webhook_signing_secrets_subscription_idx').on('webhook_signing_secrets').column('subscription_id').execute();
  // At most one current secret per owner, even when two requests race to create or rotate one.
  await db.schema
    .createIndex('webhook_signing_secrets_current_subscription_unique')
    .unique()
    .on('webhook_signing_secrets')
    .column('subscription_id')
    .where(sql<boolean>`subscription_id is not null and expires_at is null`)
    .execute();
  await db.schema
    .createIndex('webhook_signing_secrets_current_account_unique')
    .unique()
    .on('webhook_signing_secrets')
    .column('account_id')
    .where(sql<boolean>`subscription_id is null and expires_at is null`)
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('webhook_signing_secrets').execute();
  await db.schema.dropTable('subscriptions').execute();
}
