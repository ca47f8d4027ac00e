import type { Kysely } from 'kysely';
import { epochMs } from './types.js';

/**
 * The row `/health/ready` writes (at most once a second per process) to learn that the database
 * takes writes, not only reads (docs/deployment.md, "Monitoring"): one row, id 1, its time updated.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('readiness_probe')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('written_at', epochMs(db), (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('readiness_probe').execute();
}
