import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { sql } from 'kysely';
import { claimDueDeliveries, endHeldDeliveries, failDeliveryRun, postponeDeliveries, renewDeliveryLeases, type DeliveryClaim } from '../../src/storage/queue/delivery-rows.js';
import { insertNotifications, newNotificationRow } from '../../src/storage/repositories/notifications.js';
import type { NotificationsTable } from '../../src/storage/tables/index.js';
import { testDialects } from '../support/databases.js';
import { startTestDatabase, type TestDatabase } from '../support/test-database.js';

const NOW = 1_000_000;
const LEASE_MS = 60_000;

for (const dialect of testDialects()) {
  describe(`delivery rows: the notification is its own delivery job [${dialect}]`, () => {
    let t: TestDatabase;
    before(async () => {
      t = await startTestDatabase(dialect);
    });
    beforeEach(async () => {
      await t.deps.db.deleteFrom('notifications').execute();
      await sql`delete from subscriptions`.execute(t.deps.db);
      await sql`delete from accounts where id = 'acc_1'`.execute(t.deps.db);
      // A subscription limited to one delivery a second (what the rate limiter's postponements are judged under).
      await sql`insert into accounts (id, name, is_operator, active, created_at) values ('acc_1', 'acc_1', 0, 1, ${NOW})`.execute(t.deps.db);
      await sql`insert into subscriptions (id, account_id, event, description, active, experiences, callback_url, callback_authorization_encrypted, callback_custom_headers, created_at, updated_at, rate_limit)
                values ('sub_limited', 'acc_1', 'registered-request', '', 1, '[]', 'https://example.com/hook', null, '{}', ${NOW}, ${NOW}, 1)`.execute(t.deps.db);
    });
    after(() => t.close());

    /** A pending notification of `account`, due at `runAt` (null: held), with the given overrides. */
    async function notification(name: string, account: string, runAt: number | null, overrides: Partial<NotificationsTable> = {}): Promise<string> {
      const row = {
        ...newNotificationRow({ accountId: account, requestId: `req_${name}`, subscriptionId: null, event: 'registered-requests', url: 'https://example.com/hook', payload: '{}' }, NOW),
        id: `msg_${name}`,
        run_at: runAt,
        ...overrides,
      };
      await insertNotifications(t.deps.db, [row]);
      return row.id;
    }
    const claim = (options: Partial<DeliveryClaim> = {}) => claimDueDeliveries(t.deps.db, { workerId: 'w-a', limit: 10, leaseMs: LEASE_MS, now: NOW, maxRuns: 20, ...options });
    const row = async (id: string) => t.deps.db.selectFrom('notifications').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

    it('a claim leases the due pending rows, oldest run_at first, and counts a run; held, ended, future and leased rows are left', async () => {
      await notification('b', 'acc_1', NOW - 10);
      await notification('a', 'acc_1', NOW - 20);
      await notification('held', 'acc_1', null);
      await notification('ended', 'acc_1', null, { status: 'succeeded' });
      await notification('future', 'acc_1', NOW + 1);
      await notification('leased', 'acc_1', NOW - 30, { lease: 'w-b:x', lease_until: NOW + 5 });
      await notification('lapsed', 'acc_1', NOW - 40, { lease: 'w-b:y', lease_until: NOW });
      const jobs = await claim();
      assert.deepEqual(jobs.map((job) => job.id).sort(), ['msg_a', 'msg_b', 'msg_lapsed']);
      const [job] = jobs.filter((j) => j.id === 'msg_a');
      assert.deepEqual(
        { kind: job!.kind, payload: job!.payload, groupKey: job!.groupKey, attempts: job!.attempts, leaseUntil: job!.leaseUntil },
        {
          kind: 'deliver-notification',
          payload: { notificationId: 'msg_a' },
          groupKey: 'acc_1',
          attempts: 1,
          leaseUntil: NOW + LEASE_MS,
        },
      );
      const stored = await row('msg_a');
      assert.deepEqual(
        { lease: stored.lease, lease_until: Number(stored.lease_until), run_at: Number(stored.run_at), runs: stored.runs },
        { lease: job!.lease, lease_until: NOW + LEASE_MS, run_at: NOW - 20, runs: 1 },
      );
      assert.deepEqual(await claim(), [], 'nothing more is due');
    });

    it('a fair claim leaves out the accounts named, and the ids the claimer still runs', async () => {
      await notification('flood1', 'acc_flood', NOW - 30);
      await notification('flood2', 'acc_flood', NOW - 29);
      await notification('light', 'acc_light', NOW - 1);
      await notification('other', 'acc_z', NOW - 2);
      assert.deepEqual(
        (await claim({ excludeGroups: ['acc_flood'], excludeIds: ['msg_other'] })).map((job) => job.id),
        ['msg_light'],
      );
      assert.deepEqual(
        (await claim({ limit: 1 })).map((job) => job.id),
        ['msg_flood1'],
      );
    });

    it("every holder's write is conditional on its lease: renew, end, fail and postpone write nothing once another holds it", async () => {
      await notification('one', 'acc_1', NOW - 1, { subscription_id: 'sub_limited' });
      const [mine] = await claim();
      const stale = { ...mine!, lease: 'w-a:stale' };
      assert.equal(await renewDeliveryLeases(t.deps.db, [stale], NOW + 2 * LEASE_MS), 0);
      assert.deepEqual(await endHeldDeliveries(t.deps.db, [stale]), new Set());
      assert.equal(await failDeliveryRun(t.deps.db, stale, { now: NOW }), 'lost');
      assert.deepEqual(await postponeDeliveries(t.deps.db, [{ job: stale, runAt: NOW + 500, limit: 1 }], NOW), new Set());
      assert.deepEqual({ lease: (await row('msg_one')).lease }, { lease: mine!.lease });

      assert.equal(await renewDeliveryLeases(t.deps.db, [mine!], NOW + 2 * LEASE_MS), 1);
      assert.equal(mine!.leaseUntil, NOW + 2 * LEASE_MS);
      assert.deepEqual(await postponeDeliveries(t.deps.db, [{ job: mine!, runAt: NOW + 500, limit: 1 }], NOW), new Set(['msg_one']));
      const postponed = await row('msg_one');
      assert.deepEqual({ run_at: Number(postponed.run_at), lease: postponed.lease, runs: postponed.runs, postponed: postponed.postponed }, { run_at: NOW + 500, lease: null, runs: 0, postponed: 1 });
    });

    it("a postponement judged under a limit its subscription no longer has makes the delivery due now instead: a lift between a delivery's read and its postponement does not keep the old pace", async () => {
      await notification('kept', 'acc_1', NOW - 2, { subscription_id: 'sub_limited' });
      await notification('lifted', 'acc_1', NOW - 1, { subscription_id: 'sub_limited' });
      const [kept, lifted] = await claim();
      // Judged under 1 per second; the subscription still has it for the first, not any more for the second.
      assert.deepEqual(await postponeDeliveries(t.deps.db, [{ job: kept!, runAt: NOW + 2_000, limit: 1 }], NOW), new Set(['msg_kept']));
      await sql`update subscriptions set rate_limit = null where id = 'sub_limited'`.execute(t.deps.db);
      assert.deepEqual(await postponeDeliveries(t.deps.db, [{ job: lifted!, runAt: NOW + 3_000, limit: 1 }], NOW), new Set(['msg_lifted']), 'still given back by its holder');
      const state = async (id: string) => {
        const stored = await row(id);
        return { run_at: Number(stored.run_at), lease: stored.lease, runs: stored.runs, postponed: stored.postponed };
      };
      assert.deepEqual(await state('msg_kept'), { run_at: NOW + 2_000, lease: null, runs: 0, postponed: 1 });
      assert.deepEqual(await state('msg_lifted'), { run_at: NOW, lease: null, runs: 0, postponed: 0 }, 'due now, to ask again under no limit');
    });

    it('a run without an outcome is due again after the retry delay, and after the last run it is no longer scheduled', async () => {
      await notification('one', 'acc_1', NOW - 1);
      const [first] = await claim({ maxRuns: 2 });
      assert.equal(await failDeliveryRun(t.deps.db, first!, { now: NOW }), 'retrying');
      assert.equal(Number((await row('msg_one')).run_at), NOW + 1000);
      const [second] = await claim({ maxRuns: 2, now: NOW + 1000 });
      assert.equal(second!.attempts, 2);
      assert.equal(await failDeliveryRun(t.deps.db, second!, { now: NOW + 1000 }), 'failed');
      const ended = await row('msg_one');
      assert.deepEqual({ run_at: ended.run_at, lease: ended.lease, status: ended.status }, { run_at: null, lease: null, status: 'pending' }, 'the caller ends the notification');
    });

    if (dialect === 'postgres') {
      it('on PostgreSQL a claim leases at most its limit whatever the plan: the due rows are read once', async () => {
        for (let i = 0; i < 20; i++) await notification(`many${i}`, 'acc_1', NOW - 100 + i);
        // The plan CI once got for a small table: a nested loop that ran the due rows' locking
        // subquery again for each notification, each run locking the next rows (all 20 leased).
        const claimed = await t.deps.db.transaction().execute(async (tx) => {
          for (const setting of ['enable_hashjoin', 'enable_mergejoin', 'enable_material', 'enable_hashagg', 'enable_sort']) await sql.raw(`set local ${setting} = off`).execute(tx);
          return claimDueDeliveries(tx, { workerId: 'w-a', limit: 6, leaseMs: LEASE_MS, now: NOW, maxRuns: 20 });
        });
        assert.deepEqual(claimed.map((job) => job.id).sort(), ['msg_many0', 'msg_many1', 'msg_many2', 'msg_many3', 'msg_many4', 'msg_many5']);
        const leased = await t.deps.db.selectFrom('notifications').select('id').where('lease', 'is not', null).execute();
        assert.equal(leased.length, 6, 'only the claimed rows carry a lease');
      });

      it('on PostgreSQL a claim and a renewal are HOT updates: no index entry written', async () => {
        await sql`vacuum notifications`.execute(t.deps.db);
        for (let i = 0; i < 20; i++) await notification(`hot${i}`, 'acc_1', NOW - 100 + i);
        // Each in its own transaction, as the loop makes them (within one, the versions it leaves
        // cannot be pruned yet), on one connection whose earlier counts are flushed first: the
        // counters of the transaction then say what it did.
        const counted = <T>(work: (tx: typeof t.deps.db) => Promise<T>) =>
          t.deps.db.connection().execute(async (connection) => {
            await sql`select pg_stat_force_next_flush()`.execute(connection);
            return connection.transaction().execute(async (tx) => {
              const counts = async () =>
                (
                  await sql<{
                    upd: string;
                    hot: string;
                  }>`select coalesce(sum(n_tup_upd), 0) as upd, coalesce(sum(n_tup_hot_upd), 0) as hot from pg_stat_xact_user_tables where relid in (select inhrelid from pg_inherits where inhparent = 'notifications'::regclass)`.execute(
                    tx,
                  )
                ).rows[0]!;
              const before = await counts();
              const result = await work(tx);
              const after = await counts();
              return { result, updates: Number(after.upd) - Number(before.upd), hot: Number(after.hot) - Number(before.hot) };
            });
          });
        const claimed = await counted((tx) => claimDueDeliveries(tx, { workerId: 'w-a', limit: 6, leaseMs: LEASE_MS, now: NOW, maxRuns: 20 }));
        assert.equal(claimed.result.length, 6);
        assert.deepEqual({ updates: claimed.updates, hot: claimed.hot }, { updates: 6, hot: 6 }, 'every claim stayed on its page, with no index entry');
        const renewed = await counted((tx) => renewDeliveryLeases(tx, claimed.result, NOW + 2 * LEASE_MS));
        assert.equal(renewed.result, 6);
        assert.deepEqual({ updates: renewed.updates, hot: renewed.hot }, { updates: 6, hot: 6 }, 'and every renewal');
      });
    }
  });
}
