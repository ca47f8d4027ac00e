import { sql, type Kysely } from 'kysely';

/** A test send (POST /subscriptions/{id}/test) is a notification like any other, marked as a test. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('notifications')
    .addColumn('test', 'integer', (column) => column.notNull().defaultTo(sql`0`))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('notifications').dropColumn('test').execute();
}
