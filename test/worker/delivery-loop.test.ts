// needs: database
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { sql } from 'kysely';
import { createQueueMetrics } from '../../src/metrics.js';
import { applyHandOff, settleDeliveries, type Delivery } from '../../src/storage/deliveries.js';
import { dialectOf } from '../../src/storage/dialect.js';
import { dueWith } from '../../src/storage/queue/due-jobs.js';
import { insertNotifications, newNotificationRow } from '../../src/storage/repositories/notifications.js';
import { createDeliveryLoop, type Deliverer } from '../../src/worker/delivery-loop.js';
import { testDialects } from '../support/databases.js';
import { gate } from '../support/receivers.js';
import { startTestDatabase, type TestDatabase } from '../support/test-database.js';

/** The delivery loop's room on the real delivery queue: its capacity, the room a claim and a hand-off promise, and the account bound. */
for (const dialect of testDialects()) {
  describe(`delivery loop room [${dialect}]`, () => {
    let t: TestDatabase;
    before(async () => {
      t = await startTestDatabase(dialect);
    });
    beforeEach(async () => {
      await t.deps.db.deleteFrom('notifications').execute();
    });
    after(() => t.close());

    const rowsOf = (account: string, names: string[], runAt = 0) =>
      names.map((name, i) => ({
        ...newNotificationRow({ accountId: account, requestId: `req_${name}`, subscriptionId: null, event: 'registered-requests', url: 'https://example.com/hook', payload: '{}' }, Date.now()),
        id: `msg_${name}`,
        run_at: runAt + i,
      }));
    const due = (account: string, prefix: string, count: number) =>
      insertNotifications(
        t.deps.db,
        rowsOf(
          account,
          Array.from({ length: count }, (_, i) => `${prefix}${String(i).padStart(3, '0')}`),
        ),
      );

    /** A loop of `capacity` whose deliveries hold their room until `release` opens (or their own gate); counts how many hold it at once, per account. */
    function loopOf(capacity: number) {
      const release = gate();
      const own = new Map<string, ReturnType<typeof gate>>();
      const holding = new Map<string, number>();
      let running = 0;
      let most = 0;
      const deliverer: Deliverer = {
        async deliver(delivery, callOver) {
          running += 1;
          most = Math.max(most, running);
          holding.set(delivery.accountId, (holding.get(delivery.accountId) ?? 0) + 1);
          const mine = gate();
          own.set(delivery.id, mine);
          await Promise.race([release.wait, mine.wait]);
          running -= 1;
          holding.set(delivery.accountId, holding.get(delivery.accountId)! - 1);
          callOver();
          const { settled } = await settleDeliveries(t.deps.db, [
            { id: delivery.id, lease: delivery.lease, status: 'succeeded', attemptCount: 1, lastStatusCode: 200, lastError: null, nextAttemptAt: null, now: Date.now() },
          ]);
          return settled.has(delivery.id);
        },
        runFailed: async (_delivery: Delivery, error) => assert.fail(String(error)),
      };
      const loop = createDeliveryLoop({ db: t.deps.db, log: t.deps.log, metrics: createQueueMetrics(), workerId: 'w-loop-test', leaseMs: 60_000, deliverer, capacity });
      const tick = () => new Promise((resolve) => setImmediate(resolve));
      const finish = async () => {
        loop.stop();
        release.open();
        await loop.drain();
      };
      return { loop, most: () => most, running: () => running, holding: (account: string) => holding.get(account) ?? 0, releaseOne: (id: string) => own.get(id)!.open(), tick, finish };
    }

    it('a claim leaves alone the room promised to a batch in flight: the handed-off deliveries and the claimed ones fit the capacity together', async () => {
      const { loop, most, tick, finish } = loopOf(8);
      await due('acc_a', 'a', 20);
      // A batch begins: its hand-off promises room (a newcomer's share of 8: 4) to the deliveries it will write.
      const offer = loop.offer();
      assert.equal(offer.room, 4);
      assert.equal(await loop.step(), 4, 'a claim takes only the room left');
      await insertNotifications(t.deps.db, applyHandOff(rowsOf('acc_b', ['b1', 'b2', 'b3', 'b4'], Date.now() - 1000), offer, Date.now()));
      assert.equal(offer.taken.length, 4);
      loop.adopt(offer, true);
      assert.equal(await loop.step(), 0, 'the loop is full');
      await tick();
      assert.equal(most(), 8, `${most()} deliveries held room at once in a loop of 8`);
      await finish();
    });

    it('a hand-off leaves alone the room of a claim in flight: the claimed deliveries and the handed-off ones fit the capacity together', async () => {
      const { loop, most, tick, finish } = loopOf(8);
      await due('acc_a', 'a', 20);
      // A claim (a newcomer's share: 4) is on its way to the database when a batch begins.
      const claiming = loop.step();
      const offer = loop.offer();
      assert.equal(offer.room, 4, 'the hand-off gets the room the claim did not promise');
      await insertNotifications(t.deps.db, applyHandOff(rowsOf('acc_b', ['b1', 'b2', 'b3', 'b4', 'b5', 'b6'], Date.now() - 1000), offer, Date.now()));
      assert.equal(offer.taken.length, 4);
      assert.equal(offer.declined, 2, 'what found no room is left to a claim');
      loop.adopt(offer, true);
      assert.equal(await claiming, 4);
      await tick();
      assert.equal(most(), 8);
      await finish();
    });

    it('an account alone holds half the capacity; a flood whose calls hang never fills the loop: another account is claimed at once, stepping over the backlog', async () => {
      const { loop, holding, tick, finish } = loopOf(8);
      await due('acc_flood', 'f', 30);
      assert.equal(await loop.step(), 4, 'an account alone holds half the loop');
      assert.equal(await loop.step(), 0, 'and no more, though 26 more are due');
      await due('acc_light', 'l', 3);
      loop.woken();
      assert.equal(await loop.step(), 2, "the light account's deliveries are claimed past the flood's backlog, up to a newcomer's share");
      await tick();
      assert.equal(holding('acc_flood'), 4);
      assert.equal(holding('acc_light'), 2);
      await finish();
    });

    it('a drained loop claims again when an account it left out drops far enough below its bound, without a wake-up', async () => {
      const { loop, releaseOne, holding, tick, finish } = loopOf(8);
      await due('acc_flood', 'f', 10);
      assert.equal(await loop.step(), 4);
      assert.equal(await loop.step(), 0);
      assert.equal(loop.mode, 'drained', 'the claim left the flood out and found nothing else');
      await tick();
      for (const id of ['msg_f000', 'msg_f001']) releaseOne(id);
      await new Promise((resolve) => setTimeout(resolve, 50));
      assert.equal(loop.mode, 'claiming', 'two calls over: the flood may take a claim again');
      assert.equal(await loop.step(), 2);
      await tick();
      assert.equal(holding('acc_flood'), 4);
      await finish();
    });

    it("a claim that leaves an account out does not read that account's backlog: 50,000 due deliveries are stepped over by index", async () => {
      const now = Date.now();
      const columns = sql.raw('id, account_id, request_id, subscription_id, event, url, payload, status, attempt_count, created_at, updated_at, test, has_waiters, run_at, runs, postponed');
      if (dialect === 'sqlite') {
        await sql`with recursive n(i) as (select 1 union all select i + 1 from n where i < 50000)
          insert into notifications (${columns})
          select 'msg_big_' || i, 'acc_big', 'req_' || i, null, 'registered-requests', 'https://example.com/hook', '{}', 'pending', 0, ${now}, ${now}, 0, 0, ${now} - 3600000 + i, 0, 0 from n`.execute(
          t.deps.db,
        );
      } else {
        await sql`insert into notifications (${columns})
          select 'msg_big_' || i, 'acc_big', 'req_' || i, null, 'registered-requests', 'https://example.com/hook', '{}', 'pending', 0, ${now}::bigint, ${now}::bigint, 0, 0, ${now}::bigint - 3600000 + i, 0, 0 from generate_series(1, 50000) i`.execute(
          t.deps.db,
        );
        await sql`analyze notifications`.execute(t.deps.db);
      }
      await insertNotifications(t.deps.db, rowsOf('acc_light', ['light'], now - 1));
      const read = dueWith({
        table: 'notifications',
        groups: { column: 'account_id', index: 'notifications_due_account_idx' },
        parts: [sql<boolean>`status = 'pending' and run_at is not null and (lease_until is null or lease_until <= cast(${now} as bigint))`],
        limit: 10,
        now,
        dialect: dialectOf(t.deps.db),
        excludeGroups: ['acc_big'],
      });
      if (dialect === 'sqlite') {
        const plan = (await sql<{ detail: string }>`explain query plan ${read} select id from due`.execute(t.deps.db)).rows.map((r) => r.detail).join(' | ');
        assert.match(plan, /notifications_due_account_idx \(account_id[<>]\?\)/, plan);
      } else {
        const [plan] = (await sql<{ 'QUERY PLAN': unknown }>`explain (analyze, format json) ${read} select id from due`.execute(t.deps.db)).rows.map((r) => r['QUERY PLAN']);
        const text = JSON.stringify(plan);
        assert.match(text, /notifications_due_account_idx|account_id_run_at_idx/, text); // a partition's copy of the index has a name of its own
        const most = [...text.matchAll(/"Actual Rows":(\d+)/g)].reduce((max, m) => Math.max(max, Number(m[1])), 0);
        assert.ok(most <= 10, `the plan read ${most} rows somewhere: ${text}`);
      }
    });
  });
}
