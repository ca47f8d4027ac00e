// Lookups by a list of ids read the primary key, never the whole table (src/storage/precompiled.ts,
// `idList`): `in (select jsonb_array_elements_text(…))` was planned as a sequential scan of every
// notification on each claim of the delivery loop. PostgreSQL counts, per transaction, the rows
// read by sequential scans of each table (pg_stat_xact_user_tables; the notifications' partitions
// summed): the hot lookups must add none (a partition with no row may be scanned: it reads none).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { openStorage, type Storage } from '../../src/storage/database.js';
import { migrateToLatest } from '../../src/storage/migrations/index.js';
import { findNotificationsForDelivery, insertNotifications, newNotificationRow, releaseWaitingFor } from '../../src/storage/repositories/notifications.js';
import { createPostgresSchema, postgresUrl, testDialects } from '../support/databases.js';

describe('id-list lookups use the primary key [postgres]', { skip: testDialects().includes('postgres') ? false : 'needs PostgreSQL' }, () => {
  let storage: Storage;
  let drop: () => Promise<void>;
  const ids: string[] = [];

  before(async () => {
    const schema = await createPostgresSchema();
    drop = schema.drop;
    storage = openStorage(postgresUrl(), { schema: schema.schema, poolSize: 2 });
    await migrateToLatest(storage.db);
    // Enough rows that a sequential scan is what the old form got (20,000: a hash semi-join over all of them).
    const now = Date.now();
    const rows = Array.from({ length: 20_000 }, (_, i) => newNotificationRow({ accountId: 'acc_plan', requestId: `req_plan_${i}`, subscriptionId: null, event: 'registered-requests', url: 'https://example.com/hook', payload: '{}' }, now));
    for (let i = 0; i < rows.length; i += 500) await insertNotifications(storage.db, rows.slice(i, i + 500));
    await sql`analyze notifications`.execute(storage.db);
    ids.push(rows[5]!.id, rows[15_000]!.id);
  });
  after(async () => {
    await storage?.close();
    await drop?.();
  });

  it("the delivery loop's notification lookup and the release of held notifications scan no table", async () => {
    await storage.db.transaction().execute(async (tx) => {
      const scanned = async () => Number((await sql<{ rows: string }>`select coalesce(sum(seq_tup_read), 0) as rows from pg_stat_xact_user_tables where relid in (select inhrelid from pg_inherits where inhparent = 'notifications'::regclass)`.execute(tx)).rows[0]!.rows);
      // The counts include the session's earlier ones not yet flushed: compare before and after.
      const before = await scanned();
      const found = await findNotificationsForDelivery(tx, ids);
      assert.deepEqual(found.map((row) => row.id).sort(), [...ids].sort());
      assert.equal(await scanned(), before, 'the delivery lookup scanned notifications');
      assert.deepEqual(await releaseWaitingFor(tx, ids, Date.now()), []);
      assert.equal(await scanned(), before, 'the release scanned notifications');
    });
  });
});
