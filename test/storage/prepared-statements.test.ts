// needs: database, every-node-line
// The hot statements as named prepared statements on PostgreSQL (src/storage/prepared-statements.ts).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { openStorage, type Storage } from '../../src/storage/database.js';
import { migrateToLatest } from '../../src/storage/migrations/index.js';
import { prepareStatement, preparedStatementName } from '../../src/storage/prepared-statements.js';
import { claimDeliveries } from '../../src/storage/deliveries.js';
import { findClientForAuthentication } from '../../src/storage/repositories/oauth-clients.js';
import { insertNotifications, newNotificationRow } from '../../src/storage/repositories/notifications.js';
import { createPostgresSchema, postgresUrl, testDialects } from '../support/databases.js';

describe('which statements are prepared', () => {
  it('a fixed text that names its columns, under a stable name; never one that returns a wildcard', () => {
    assert.equal(prepareStatement('select id, run_at from jobs where id = $1'), true);
    assert.match(preparedStatementName('select id, run_at from jobs where id = $1')!, /^rw_[0-9a-f]{24}$/);
    assert.equal(prepareStatement('select id, run_at from jobs where id = $1'), true, 'registered once');
    for (const text of [
      'select * from jobs where id = $1',
      'select "jobs".* from jobs',
      'select a.id, b.* from a join b on true',
      'update jobs set state = $1 returning *',
      'select id,\n  t.* from t',
    ]) {
      assert.equal(prepareStatement(text), false, text);
      assert.equal(preparedStatementName(text), undefined);
    }
    assert.equal(prepareStatement('select count(*) as n from jobs where kind = $1'), true, 'count(*) is no wildcard');
  });
});

describe('named prepared statements [postgres]', { skip: testDialects().includes('postgres') ? false : 'needs PostgreSQL' }, () => {
  const storages: Storage[] = [];
  let schema: string;
  before(async () => {
    schema = (await createPostgresSchema()).schema;
  });
  after(async () => {
    for (const storage of storages) await storage.close();
  });
  /** One connection, so that what it prepared can be read back on it. */
  const open = (preparedStatements: boolean) => {
    const storage = openStorage(postgresUrl(), { schema, poolSize: 1, preparedStatements });
    storages.push(storage);
    return storage;
  };
  const prepared = async (storage: Storage) => (await sql<{ name: string; statement: string }>`select name, statement from pg_prepared_statements`.execute(storage.db)).rows;

  it('the claim and the fixed-text statements are prepared once per connection; a statement returning a wildcard is not', async () => {
    const storage = open(true);
    await migrateToLatest(storage.db);
    const now = Date.now();
    await insertNotifications(storage.db, [
      newNotificationRow({ accountId: 'acc_1', requestId: 'req_1', subscriptionId: null, event: 'registered-requests', url: 'https://example.com/hook', payload: '{}' }, now),
    ]);
    for (let i = 0; i < 3; i++) await claimDeliveries(storage.db, { workerId: 'w', limit: 4, leaseMs: 60_000, now: now + i });
    await findClientForAuthentication(storage.db, 'cli_nobody');
    const statements = await prepared(storage);
    const claims = statements.filter((row) => row.statement.includes('update notifications set lease'));
    assert.equal(claims.length, 1, JSON.stringify(statements.map((row) => row.statement)));
    assert.match(claims[0]!.name, /^rw_/);
    assert.equal(statements.filter((row) => row.statement.includes('oauth_clients')).length, 0, 'the client lookup returns "oauth_clients".*: not prepared');
  });

  it('a prepared statement still runs after a migration adds a column to its table', async () => {
    const storage = open(true);
    const now = Date.now();
    await claimDeliveries(storage.db, { workerId: 'w', limit: 4, leaseMs: 60_000, now });
    await sql`alter table notifications add column added_later text`.execute(storage.db);
    try {
      await insertNotifications(storage.db, [
        newNotificationRow({ accountId: 'acc_1', requestId: 'req_2', subscriptionId: null, event: 'registered-requests', url: 'https://example.com/hook', payload: '{}' }, now + 1),
      ]);
      assert.equal((await claimDeliveries(storage.db, { workerId: 'w', limit: 4, leaseMs: 60_000, now: now + 120_000 })).length, 2);
    } finally {
      await sql`alter table notifications drop column added_later`.execute(storage.db);
    }
  });

  it('DATABASE_PREPARED_STATEMENTS=off: nothing is prepared', async () => {
    const storage = open(false);
    await claimDeliveries(storage.db, { workerId: 'w', limit: 4, leaseMs: 60_000, now: Date.now() });
    assert.deepEqual(await prepared(storage), []);
  });
});
