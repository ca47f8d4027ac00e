// needs: database
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { sql } from 'kysely';
import { claimDeliveries, failPendingOf, failRun, letGo, postpone, renewLeases, RUNS_WITHOUT_OUTCOME, settleDeliveries, type DeliveryClaim } from '../../src/storage/deliveries.js';
import { insertNotifications, newNotificationRow } from '../../src/storage/repositories/notifications.js';
import type { NotificationsTable } from '../../src/storage/tables/index.js';
import { testDialects } from '../support/databases.js';
import { startTestDatabase, type TestDatabase } from '../support/test-database.js';

const NOW = 1_000_000;
const LEASE_MS = 60_000;

for (const dialect of testDialects()) {
  describe(`deliveries: the notification is its own delivery [${dialect}]`, () => {
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
    const claim = (options: Partial<DeliveryClaim> = {}) => claimDeliveries(t.deps.db, { workerId: 'w-a', limit: 10, leaseMs: LEASE_MS, now: NOW, ...options });
    const row = async (id: string) => t.deps.db.selectFrom('notifications').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

    it('a claim leases the due pending rows, oldest run_at first, and counts a run; held, ended, future and leased rows are left', async () => {
      await notification('b', 'acc_1', NOW - 10);
      await notification('a', 'acc_1', NOW - 20);
      await notification('held', 'acc_1', null);
      await notification('ended', 'acc_1', null, { status: 'succeeded' });
      await notification('future', 'acc_1', NOW + 1);
      await notification('leased', 'acc_1', NOW - 30, { lease: 'w-b:x', lease_until: NOW + 5 });
      await notification('lapsed', 'acc_1', NOW - 40, { lease: 'w-b:y', lease_until: NOW });
      const deliveries = await claim();
      assert.deepEqual(deliveries.map((delivery) => delivery.id).sort(), ['msg_a', 'msg_b', 'msg_lapsed']);
      const [delivery] = deliveries.filter((d) => d.id === 'msg_a');
      assert.deepEqual(
        { accountId: delivery!.accountId, runs: delivery!.runs, leaseUntil: delivery!.leaseUntil, createdAt: delivery!.createdAt },
        { accountId: 'acc_1', runs: 1, leaseUntil: NOW + LEASE_MS, createdAt: NOW },
      );
      const stored = await row('msg_a');
      assert.deepEqual(
        { lease: stored.lease, lease_until: Number(stored.lease_until), run_at: Number(stored.run_at), runs: stored.runs },
        { lease: delivery!.lease, lease_until: NOW + LEASE_MS, run_at: NOW - 20, runs: 1 },
      );
      assert.deepEqual(await claim(), [], 'nothing more is due');
    });

    it('a fair claim leaves out the accounts named, and the ids the claimer still runs', async () => {
      await notification('flood1', 'acc_flood', NOW - 30);
      await notification('flood2', 'acc_flood', NOW - 29);
      await notification('light', 'acc_light', NOW - 1);
      await notification('other', 'acc_z', NOW - 2);
      assert.deepEqual(
        (await claim({ excludeAccounts: ['acc_flood'], excludeIds: ['msg_other'] })).map((delivery) => delivery.id),
        ['msg_light'],
      );
      assert.deepEqual(
        (await claim({ limit: 1 })).map((delivery) => delivery.id),
        ['msg_flood1'],
      );
    });

    it("every holder's write is conditional on its lease: renew, let go, settle, fail and postpone write nothing once another holds it", async () => {
      await notification('one', 'acc_1', NOW - 1, { subscription_id: 'sub_limited' });
      const [mine] = await claim();
      const stale = { ...mine!, lease: 'w-a:stale' };
      assert.equal(await renewLeases(t.deps.db, [stale], NOW + 2 * LEASE_MS), 0);
      assert.deepEqual(await letGo(t.deps.db, [stale]), new Set());
      const settlement = { id: 'msg_one', lease: stale.lease, status: 'succeeded' as const, attemptCount: 1, lastStatusCode: 204, lastError: null, nextAttemptAt: null, now: NOW };
      assert.deepEqual(await settleDeliveries(t.deps.db, [settlement]), { settled: new Set(), waitedFor: new Set() });
      assert.deepEqual(await failRun(t.deps.db, stale, 'boom', NOW), { state: 'lost' });
      assert.deepEqual(await failRun(t.deps.db, { ...stale, runs: RUNS_WITHOUT_OUTCOME }, 'boom', NOW), { state: 'lost' }, 'nor ends it at its last run');
      assert.deepEqual(await postpone(t.deps.db, [{ delivery: stale, runAt: NOW + 500, limit: 1 }], NOW), new Set());
      const untouched = await row('msg_one');
      assert.deepEqual(
        { lease: untouched.lease, lease_until: Number(untouched.lease_until), status: untouched.status, runs: untouched.runs },
        { lease: mine!.lease, lease_until: NOW + LEASE_MS, status: 'pending', runs: 1 },
      );

      assert.equal(await renewLeases(t.deps.db, [mine!], NOW + 2 * LEASE_MS), 1);
      assert.equal(mine!.leaseUntil, NOW + 2 * LEASE_MS);
      assert.deepEqual(await postpone(t.deps.db, [{ delivery: mine!, runAt: NOW + 500, limit: 1 }], NOW), new Set(['msg_one']));
      const postponed = await row('msg_one');
      assert.deepEqual({ run_at: Number(postponed.run_at), lease: postponed.lease, runs: postponed.runs, postponed: postponed.postponed }, { run_at: NOW + 500, lease: null, runs: 0, postponed: 1 });
    });

    it("a postponement judged under a limit its subscription no longer has makes the delivery due now instead: a lift between a delivery's read and its postponement does not keep the old pace", async () => {
      await notification('kept', 'acc_1', NOW - 2, { subscription_id: 'sub_limited' });
      await notification('lifted', 'acc_1', NOW - 1, { subscription_id: 'sub_limited' });
      const [kept, lifted] = await claim();
      // Judged under 1 per second; the subscription still has it for the first, not any more for the second.
      assert.deepEqual(await postpone(t.deps.db, [{ delivery: kept!, runAt: NOW + 2_000, limit: 1 }], NOW), new Set(['msg_kept']));
      await sql`update subscriptions set rate_limit = null where id = 'sub_limited'`.execute(t.deps.db);
      assert.deepEqual(await postpone(t.deps.db, [{ delivery: lifted!, runAt: NOW + 3_000, limit: 1 }], NOW), new Set(['msg_lifted']), 'still given back by its holder');
      const state = async (id: string) => {
        const stored = await row(id);
        return { run_at: Number(stored.run_at), lease: stored.lease, runs: stored.runs, postponed: stored.postponed };
      };
      assert.deepEqual(await state('msg_kept'), { run_at: NOW + 2_000, lease: null, runs: 0, postponed: 1 });
      assert.deepEqual(await state('msg_lifted'), { run_at: NOW, lease: null, runs: 0, postponed: 0 }, 'due now, to ask again under no limit');
    });

    it('a run without an outcome is due again after the retry delay, and after RUNS_WITHOUT_OUTCOME runs its notification ends failed', async () => {
      await notification('one', 'acc_1', NOW - 1, { attempt_count: 2, last_status_code: 503 });
      const [first] = await claim();
      assert.deepEqual(await failRun(t.deps.db, first!, 'boom', NOW), { state: 'retrying' });
      const retrying = await row('msg_one');
      assert.deepEqual(
        { run_at: Number(retrying.run_at), lease: retrying.lease, lease_until: retrying.lease_until, runs: retrying.runs, status: retrying.status },
        { run_at: NOW + 1000, lease: null, lease_until: null, runs: 1, status: 'pending' },
      );
      assert.deepEqual(await claim(), [], 'not due before its retry delay');
      const [second] = await claim({ now: NOW + 1000 });
      assert.equal(second!.runs, 2);
      assert.deepEqual(await failRun(t.deps.db, second!, 'boom', NOW + 1000), { state: 'retrying' });
      assert.equal(Number((await row('msg_one')).run_at), NOW + 3000, 'the delay doubles');

      // The runs before the last one, each without an outcome.
      await sql`update notifications set runs = ${RUNS_WITHOUT_OUTCOME - 1} where id = 'msg_one'`.execute(t.deps.db);
      const [last] = await claim({ now: NOW + 10_000 });
      assert.equal(last!.runs, RUNS_WITHOUT_OUTCOME);
      assert.deepEqual(await failRun(t.deps.db, last!, 'the delivery could not be run: boom', NOW + 10_000), {
        state: 'failed',
        ended: { account_id: 'acc_1', request_id: 'req_one', event: 'registered-requests', url: 'https://example.com/hook', test: 0, attempt_count: 2, last_status_code: 503 },
      });
      const ended = await row('msg_one');
      assert.deepEqual(
        {
          status: ended.status,
          last_error: ended.last_error,
          completed_at: Number(ended.completed_at),
          updated_at: Number(ended.updated_at),
          run_at: ended.run_at,
          lease: ended.lease,
          lease_until: ended.lease_until,
        },
        { status: 'failed', last_error: 'the delivery could not be run: boom', completed_at: NOW + 10_000, updated_at: NOW + 10_000, run_at: null, lease: null, lease_until: null },
      );
      assert.deepEqual(await claim({ now: NOW + 20_000 }), [], 'ended: never due again');
      assert.deepEqual(await failRun(t.deps.db, last!, 'again', NOW + 20_000), { state: 'lost' }, 'its lease is gone with it');
    });

    it("a switch-off fails the subscription's pending deliveries except test sends and those in flight; one whose lease ended is taken back, and its old holder's settle writes nothing", async () => {
      await notification('lapsed', 'acc_1', NOW - 1, { subscription_id: 'sub_limited' });
      const [lapsed] = await claim({ leaseMs: 10 });
      await notification('live', 'acc_1', NOW - 1, { subscription_id: 'sub_limited', lease: 'w-b:live', lease_until: NOW + LEASE_MS, runs: 1 });
      await notification('waiting', 'acc_1', NOW + 5_000, { subscription_id: 'sub_limited', attempt_count: 1 });
      await notification('held', 'acc_1', null, { subscription_id: 'sub_limited', waits_for: 'msg_waiting' });
      await notification('test', 'acc_1', NOW - 1, { subscription_id: 'sub_limited', test: 1 });
      await notification('ended', 'acc_1', null, { subscription_id: 'sub_limited', status: 'succeeded', completed_at: NOW - 5 });
      await notification('elsewhere', 'acc_1', NOW - 1);

      const at = NOW + 10;
      const reason = 'not sent: the subscription was switched off: every attempt failed';
      assert.deepEqual((await failPendingOf(t.deps.db, 'sub_limited', reason, at)).sort(), ['msg_held', 'msg_lapsed', 'msg_waiting']);
      const state = async (id: string) => {
        const stored = await row(id);
        return { status: stored.status, run_at: stored.run_at === null ? null : Number(stored.run_at), lease: stored.lease, last_error: stored.last_error };
      };
      const failed = { status: 'failed', run_at: null, lease: null, last_error: reason };
      assert.deepEqual(await state('msg_lapsed'), failed, 'its lease had ended: taken back, the lease cleared');
      assert.deepEqual(await state('msg_waiting'), failed);
      assert.deepEqual(await state('msg_held'), failed);
      const ended = await row('msg_waiting');
      assert.deepEqual([Number(ended.completed_at), Number(ended.updated_at), ended.lease_until, ended.runs, ended.postponed], [at, at, null, 0, 0]);
      assert.deepEqual(await state('msg_live'), { status: 'pending', run_at: NOW - 1, lease: 'w-b:live', last_error: null }, 'in flight: left to its holder');
      assert.deepEqual(await state('msg_test'), { status: 'pending', run_at: NOW - 1, lease: null, last_error: null }, 'a test send goes to an inactive subscription');
      assert.equal((await row('msg_ended')).status, 'succeeded');
      assert.deepEqual(await state('msg_elsewhere'), { status: 'pending', run_at: NOW - 1, lease: null, last_error: null });

      // The old holder of the lapsed one comes back with its attempt: nothing is written over the switch-off.
      const late = { id: lapsed!.id, lease: lapsed!.lease, status: 'pending' as const, attemptCount: 1, lastStatusCode: 500, lastError: 'HTTP 500', nextAttemptAt: at + 1000, now: at + 5 };
      assert.deepEqual(await settleDeliveries(t.deps.db, [late]), { settled: new Set(), waitedFor: new Set() });
      assert.deepEqual(await state('msg_lapsed'), failed);
      assert.equal((await row('msg_lapsed')).attempt_count, 0);
    });

    if (dialect === 'postgres') {
      it('on PostgreSQL a claim leases at most its limit whatever the plan: the due rows are read once', async () => {
        for (let i = 0; i < 20; i++) await notification(`many${i}`, 'acc_1', NOW - 100 + i);
        // The plan CI once got for a small table: a nested loop that ran the due rows' locking
        // subquery again for each notification, each run locking the next rows (all 20 leased).
        const claimed = await t.deps.db.transaction().execute(async (tx) => {
          for (const setting of ['enable_hashjoin', 'enable_mergejoin', 'enable_material', 'enable_hashagg', 'enable_sort']) await sql.raw(`set local ${setting} = off`).execute(tx);
          return claimDeliveries(tx, { workerId: 'w-a', limit: 6, leaseMs: LEASE_MS, now: NOW });
        });
        assert.deepEqual(claimed.map((delivery) => delivery.id).sort(), ['msg_many0', 'msg_many1', 'msg_many2', 'msg_many3', 'msg_many4', 'msg_many5']);
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
        const claimed = await counted((tx) => claimDeliveries(tx, { workerId: 'w-a', limit: 6, leaseMs: LEASE_MS, now: NOW }));
        assert.equal(claimed.result.length, 6);
        assert.deepEqual({ updates: claimed.updates, hot: claimed.hot }, { updates: 6, hot: 6 }, 'every claim stayed on its page, with no index entry');
        const renewed = await counted((tx) => renewLeases(tx, claimed.result, NOW + 2 * LEASE_MS));
        assert.equal(renewed.result, 6);
        assert.deepEqual({ updates: renewed.updates, hot: renewed.hot }, { updates: 6, hot: 6 }, 'and every renewal');
      });
    }
  });
}
