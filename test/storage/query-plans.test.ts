// needs: database
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
import { newId } from '../../src/domain/ids.js';
import type { Executor } from '../../src/storage/database.js';
import { countNotifications, findNotificationsForDelivery, insertNotifications, listNotifications, newNotificationRow, type NotificationFilter } from '../../src/storage/repositories/notifications.js';
import { releaseWaitingFor } from '../../src/storage/deliveries.js';
import { insertRequestRows, listRequests, listRequestsQuery, newRequestRow } from '../../src/storage/repositories/requests.js';
import type { NotificationsTable } from '../../src/storage/tables/index.js';
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
    const rows = Array.from({ length: 20_000 }, (_, i) =>
      newNotificationRow({ accountId: 'acc_plan', requestId: `req_plan_${i}`, subscriptionId: null, event: 'registered-requests', url: 'https://example.com/hook', payload: '{}' }, now),
    );
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
      const scanned = async () =>
        Number(
          (
            await sql<{
              rows: string;
            }>`select coalesce(sum(seq_tup_read), 0) as rows from pg_stat_xact_user_tables where relid in (select inhrelid from pg_inherits where inhparent = 'notifications'::regclass)`.execute(tx)
          ).rows[0]!.rows,
        );
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

/** Rows a transaction has read from `table` (its partitions summed) by sequential and index scans so far. */
async function rowsRead(tx: Executor, table: string): Promise<number> {
  const { rows } = await sql<{ rows: string }>`select coalesce(sum(seq_tup_read + coalesce(idx_tup_fetch, 0)), 0) as rows from pg_stat_xact_user_tables
      where relid = ${table}::regclass or relid in (select inhrelid from pg_inherits where inhparent = ${table}::regclass)`.execute(tx);
  return Number(rows[0]!.rows);
}

describe("the read API reads its own rows, not an account's whole history [postgres]", { skip: testDialects().includes('postgres') ? false : 'needs PostgreSQL' }, () => {
  let storage: Storage;
  const now = Date.now();
  const DAY = 86_400_000;

  before(async () => {
    const schema = await createPostgresSchema();
    storage = openStorage(postgresUrl(), { schema: schema.schema, poolSize: 2 });
    await migrateToLatest(storage.db);
    for (const id of ['acc_a', 'acc_b']) await storage.db.insertInto('accounts').values({ id, name: id, is_operator: 0, active: 1, created_at: now }).execute();
    // Requests: 20,000 of another account interleaved with 2,000 of acc_a, in groups sharing a millisecond.
    const requests = Array.from({ length: 22_000 }, (_, i) => {
      const at = now - DAY + (i - (i % 20)) * 1000;
      return newRequestRow({ id: newId('req', at), accountId: i % 11 === 0 ? 'acc_a' : 'acc_b', experience: 'summer' }, at);
    });
    for (let i = 0; i < requests.length; i += 1000) await insertRequestRows(storage.db, requests.slice(i, i + 1000));
    // The delivery log: acc_a 20,000 delivered notifications over 30 days, then a few pending and failed
    // of sub_a (one a test send); acc_b a backlog of 10,000 pending, so pending notifications are many overall.
    const log: NotificationsTable[] = [];
    const make = (accountId: string, subscriptionId: string, at: number, status: NotificationsTable['status'], test = false, requestId = 'req_plan') => ({
      ...newNotificationRow({ accountId, requestId, subscriptionId, event: 'registered-requests', url: 'https://example.com/hook', payload: '{}', test }, at),
      status,
      run_at: status === 'pending' ? at : null,
      completed_at: status === 'pending' ? null : at,
    });
    for (let i = 0; i < 20_000; i++) log.push(make('acc_a', i % 2 ? 'sub_a' : 'sub_a2', now - 30 * DAY + i * 60_000, 'succeeded', false, `req_a_${i}`));
    for (let i = 0; i < 10_000; i++) log.push(make('acc_b', 'sub_b', now - DAY + i * 1000, 'pending'));
    log.push(make('acc_a', 'sub_a', now - 40 * DAY, 'failed'), make('acc_a', 'sub_a', now - 20 * DAY, 'failed', true));
    log.push(make('acc_a', 'sub_a', now - 25 * DAY, 'pending'), make('acc_a', 'sub_a', now - 2 * DAY, 'pending'), make('acc_a', 'sub_a', now - DAY, 'pending', true));
    for (let i = 0; i < log.length; i += 1000) await insertNotifications(storage.db, log.slice(i, i + 1000));
    await sql`analyze requests, notifications`.execute(storage.db);
  });
  after(async () => {
    await storage?.close();
  });

  it("an account's newest requests, and the next page, read requests_account_created_idx from the account's newest row: no other account's rows", async () => {
    const plan = JSON.stringify(await listRequestsQuery(storage.db, { accountId: 'acc_a', limit: 50 }).explain('json'));
    assert.match(plan, /"Index Name":\s*"requests_account_created_idx"/);
    assert.match(plan, /"Index Cond":\s*"\(account_id = 'acc_a'::text\)"/);
    assert.doesNotMatch(plan, /Seq Scan/);
    await storage.db.transaction().execute(async (tx) => {
      const before = await rowsRead(tx, 'requests');
      const first = await listRequests(tx, { accountId: 'acc_a', limit: 50 });
      const last = first.requests.at(-1)!;
      const second = await listRequests(tx, { accountId: 'acc_a', after: { createdAt: last.createdAt, id: last.id }, limit: 50 });
      assert.equal(first.requests.length + second.requests.length, 100);
      assert.ok([...first.requests, ...second.requests].every((r) => r.accountId === 'acc_a'));
      // Each page reads its rows and the rest of the last millisecond's group (ties are sorted), nothing of acc_b's.
      const read = (await rowsRead(tx, 'requests')) - before;
      assert.ok(read <= 2 * (51 + 20), `read ${read} rows for two pages of 50`);
    });
  });

  it("the delivery log's pending and failed of a subscription, an account's failed and a request's notifications, listed and counted, read only those", async () => {
    const filters: Array<[NotificationFilter, number]> = [
      [{ accountId: 'acc_a', subscriptionId: 'sub_a', status: 'pending' }, 3],
      [{ accountId: 'acc_a', subscriptionId: 'sub_a', status: 'failed' }, 2],
      [{ accountId: 'acc_a', status: 'failed' }, 2],
      [{ accountId: 'acc_a', requestId: 'req_a_7' }, 1],
    ];
    await storage.db.transaction().execute(async (tx) => {
      for (const [filter, count] of filters) {
        const before = await rowsRead(tx, 'notifications');
        const { rows } = await listNotifications(tx, { ...filter, limit: 50 });
        assert.equal(rows.length, count, JSON.stringify(filter));
        assert.equal(await countNotifications(tx, filter), count, JSON.stringify(filter));
        // Without their indexes these walked acc_a's 20,000 notifications (or acc_b's backlog).
        const read = (await rowsRead(tx, 'notifications')) - before;
        assert.ok(read <= 4 * count + 10, `${JSON.stringify(filter)}: read ${read} rows for ${count}`);
      }
    });
  });
});
