import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect.js';
import { epochMs } from './types.js';

/**
 * Endpoint circuit breakers (docs/delivery.md, "Circuit breaker"). `endpoint_circuits` holds a row
 * per endpoint (an account's callback URL, as signing secrets are keyed) that is failing now, open,
 * or draining what it held: an endpoint whose attempts succeed has none, so the table stays as
 * small as the set of endpoints in trouble. `notifications.held_at` marks a notification the
 * breaker holds (not due, no attempt made); the partial index finds an endpoint's held ones,
 * oldest first, for its probes and its release, and holds no entry while nothing is held.
 *
 * Expand-only, safe while the previous release's processes run (docs/deployment.md, "Upgrades
 * without downtime"): a new table, a nullable column without a default (no row is written), and
 * an index built without blocking the log's writers.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const time = epochMs(db);
  await db.schema
    .createTable('endpoint_circuits')
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('failures', 'integer', (c) => c.notNull())
    .addColumn('reason', 'text')
    .addColumn('opened_at', time)
    .addColumn('closed_at', time)
    .addColumn('next_probe_at', time)
    .addColumn('probe_interval_ms', 'integer')
    .addColumn('probe_id', 'text')
    .addColumn('probe_until', time)
    .addColumn('probes', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('updated_at', time, (c) => c.notNull())
    .addPrimaryKeyConstraint('endpoint_circuits_pkey', ['account_id', 'url'])
    .execute();
  await db.schema.alterTable('notifications').addColumn('held_at', time).execute();
  // On the partitioned log (PostgreSQL) the index is made ON ONLY the parent here, and each
  // partition's is built CONCURRENTLY after the commit (partitioned-indexes.ts): no writer waits.
  if (dialectOf(db).partitionedLog) {
    await sql`create index notifications_held_idx on only notifications (account_id, url, created_at, id) where held_at is not null`.execute(db);
  } else {
    await db.schema.createIndex('notifications_held_idx').on('notifications').columns(['account_id', 'url', 'created_at', 'id']).where(sql.ref('held_at'), 'is not', null).execute();
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('notifications_held_idx').execute();
  await db.schema.alterTable('notifications').dropColumn('held_at').execute();
  await db.schema.dropTable('endpoint_circuits').execute();
}
