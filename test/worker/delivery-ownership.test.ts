// needs: database
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { createQueueMetrics } from '../../src/metrics.js';
import { applyHandOff, claimDeliveries, failPendingOf, listenUrl, renewLeases, retryNow, settleDeliveries, type Delivery, type Settlement } from '../../src/storage/deliveries.js';
import type { Executor } from '../../src/storage/database.js';
import { insertNotifications, newNotificationRow } from '../../src/storage/repositories/notifications.js';
import { createDeliveryLoop, type Deliverer } from '../../src/worker/delivery-loop.js';
import { assertClaimed, HeldDeliveries } from '../../src/worker/delivery-ownership.js';
import { testDialects } from '../support/databases.js';
import { gate } from '../support/receivers.js';
import { startTestDatabase, type TestDatabase } from '../support/test-database.js';

/**
 * The ownership rules of delivery-ownership.ts on the real delivery queue (notification rows),
 * each interleaving forced with a clock the test moves (leases of a minute, so the heartbeat never
 * runs): a renewal too late for its lease, a hand-off that commits after its lease ended, a claim
 * while a run is settling or after it wrote a retry, a switch-off and a manual retry beside a
 * delivery in flight, a listen copy. In each, the delivery runs once in this process, and a holder
 * whose lease was taken over writes nothing.
 */
const LEASE_MS = 60_000;
const START = 1_000_000;

for (const dialect of testDialects()) {
  describe(`delivery ownership [${dialect}]`, () => {
    let t: TestDatabase;
    before(async () => {
      t = await startTestDatabase(dialect);
    });
    beforeEach(async () => {
      await t.deps.db.deleteFrom('notifications').execute();
    });
    after(() => t.close());

    /** Pending notifications of `acc_owner`, due at `runAt`, written at START. */
    const notifications = (names: string[], overrides: { runAt?: number | null; url?: string; subscriptionId?: string } = {}) =>
      names.map((name) => ({
        ...newNotificationRow(
          {
            accountId: 'acc_owner',
            requestId: `req_${name}`,
            subscriptionId: overrides.subscriptionId ?? null,
            event: 'registered-requests',
            url: overrides.url ?? 'https://example.com/hook',
            payload: '{}',
          },
          START,
        ),
        id: `msg_${name}`,
        run_at: overrides.runAt === undefined ? 0 : overrides.runAt,
      }));
    const write = (names: string[], overrides?: Parameters<typeof notifications>[1]) => insertNotifications(t.deps.db, notifications(names, overrides));
    /** The settle of an attempt under the delivery's lease: succeeded, or a retry due at `retryAt`. */
    const settle = async (db: Executor, delivery: Delivery, now: number, retryAt?: number) => {
      const settlement: Settlement = {
        id: delivery.id,
        lease: delivery.lease,
        status: retryAt === undefined ? 'succeeded' : 'pending',
        attemptCount: 1,
        lastStatusCode: retryAt === undefined ? 200 : 503,
        lastError: null,
        nextAttemptAt: retryAt ?? null,
        now,
      };
      return (await settleDeliveries(db, [settlement])).settled.has(delivery.id);
    };

    /**
     * A delivery loop on a clock the test moves. Each run waits for `release`, then settles (by
     * default, succeeded; `settleWith` replaces it).
     */
    function loopOn(options: { settleWith?: (delivery: Delivery, now: number) => Promise<boolean> } = {}) {
      let now = START;
      const release = gate();
      const runs: Delivery[] = [];
      const deliverer: Deliverer = {
        async deliver(delivery, callOver) {
          runs.push(delivery);
          await release.wait;
          callOver();
          return (options.settleWith ?? ((d, at) => settle(t.deps.db, d, at)))(delivery, now);
        },
        runFailed: async (_delivery, error) => assert.fail(`no run throws here: ${String(error)}`),
      };
      const metrics = createQueueMetrics();
      const loop = createDeliveryLoop({ db: t.deps.db, log: t.deps.log, metrics, workerId: 'w-owner', leaseMs: LEASE_MS, deliverer, capacity: 16, clock: () => now });
      const lost = async () => (await metrics.leasesLost.get()).values.reduce((sum, value) => sum + value.value, 0);
      return { loop, release, runs, lost, now: () => now, advance: (ms: number) => (now += ms) };
    }

    const rows = () => t.deps.db.selectFrom('notifications').select(['id', 'status', 'lease', 'run_at']).orderBy('id').execute();
    const otherClaim = (now: number) => claimDeliveries(t.deps.db, { workerId: 'w-other', limit: 10, leaseMs: LEASE_MS, now });
    const settled = () => new Promise((resolve) => setTimeout(resolve, 20));

    it('rules 3 and 4, a late renewal: a lease that ended while this process runs the delivery is not claimed back by it; another worker takes it and the late settle writes nothing', async () => {
      const { loop, release, runs, lost, now, advance } = loopOn();
      await write(['a']);
      assert.equal(await loop.step(), 1);
      const [first] = runs as [Delivery];
      // The renewal never came: the lease has ended, the run goes on.
      advance(LEASE_MS + 1);
      loop.woken();
      assert.equal(await loop.step(), 0, 'its own claim leaves the delivery alone');
      assert.equal(runs.length, 1);
      const [taken] = await otherClaim(now());
      assert.equal(taken?.id, first.id, 'another worker takes the delivery over');
      // The late renewal renews nothing, and leaves the lease as this process knew it.
      assert.equal(await renewLeases(t.deps.db, [first], now() + LEASE_MS), 0);
      assert.equal(first.leaseUntil, START + LEASE_MS);
      release.open();
      loop.stop();
      await loop.drain();
      assert.equal(await lost(), 1, 'the late settle is counted lost');
      assert.deepEqual(
        (await rows()).map((row) => [row.status, row.lease]),
        [['pending', taken.lease]],
        'and written nowhere: the new holder still holds the delivery',
      );
      assert.equal(await settle(t.deps.db, taken, now()), true, 'the new holder settles it');
    });

    it('rule 3, a late renewal that nobody took over: the run settles under the lease it has, once', async () => {
      const { loop, release, runs, lost, advance } = loopOn();
      await write(['a']);
      assert.equal(await loop.step(), 1);
      advance(LEASE_MS + 1);
      loop.woken();
      assert.equal(await loop.step(), 0);
      release.open();
      loop.stop();
      await loop.drain();
      assert.equal(runs.length, 1);
      assert.equal(await lost(), 0);
      assert.deepEqual(
        (await rows()).map((row) => row.status),
        ['succeeded'],
      );
    });

    it('rule 3, a hand-off after its lease ended: the batch commits too late, the delivery is not started from the hand-off, and the next claim runs it once', async () => {
      const { loop, release, runs, now, advance } = loopOn();
      const offer = loop.offer();
      await insertNotifications(t.deps.db, applyHandOff(notifications(['a'], { runAt: now() }), offer, now()));
      assert.equal(offer.taken.length, 1);
      // The batch's commit came after the end of the lease its insert wrote (a stalled event loop, a slow disk).
      advance(LEASE_MS + 1);
      loop.adopt(offer, true);
      await settled();
      assert.equal(runs.length, 0, 'the hand-off did not start it');
      assert.equal(await loop.step(), 1, 'a claim takes it, as it would for any worker');
      assert.notEqual(runs[0]!.lease, offer.lease.token);
      release.open();
      loop.stop();
      await loop.drain();
      assert.equal(runs.length, 1);
      assert.deepEqual(
        (await rows()).map((row) => row.status),
        ['succeeded'],
      );
    });

    it('rules 1 and 2, a hand-off within its lease: started at once, and no claim takes it while the lease lasts', async () => {
      const { loop, release, runs, now, advance } = loopOn();
      const offer = loop.offer();
      await insertNotifications(t.deps.db, applyHandOff(notifications(['a'], { runAt: now() }), offer, now()));
      loop.adopt(offer, true);
      await settled();
      assert.equal(runs.length, 1);
      assert.equal(runs[0]!.lease, offer.lease.token);
      advance(LEASE_MS - 1);
      loop.woken();
      assert.equal(await loop.step(), 0);
      assert.deepEqual(await otherClaim(now()), []);
      release.open();
      loop.stop();
      await loop.drain();
      assert.equal(runs.length, 1);
    });

    it('rule 3, a claim during the settle: a claim made while a run whose lease ended is writing its outcome does not start it again', async () => {
      const settling = gate();
      const inSettle = gate();
      const { loop, release, runs, lost, advance } = loopOn({
        settleWith: async (delivery, now) => {
          inSettle.open();
          await settling.wait;
          return settle(t.deps.db, delivery, now);
        },
      });
      await write(['a']);
      assert.equal(await loop.step(), 1);
      release.open();
      await inSettle.wait;
      advance(LEASE_MS + 1);
      loop.woken();
      assert.equal(await loop.step(), 0, 'the settling run still owns the delivery here');
      settling.open();
      loop.stop();
      await loop.drain();
      assert.equal(runs.length, 1);
      assert.equal(await lost(), 0);
    });

    it('rule 3, a claim after the settle: a claim that takes a delivery whose run here wrote a retry due at once but has not ended starts the new run after it, and its other deliveries at once', async () => {
      const written = gate();
      const ending = gate();
      const { loop, release, runs, lost } = loopOn({
        settleWith: async (delivery, at) => {
          if (delivery.id === 'msg_a' && runs.filter((run) => run.id === 'msg_a').length === 1) {
            // The retry is written and visible to any claim; this run has not ended here yet.
            assert.equal(await settle(t.deps.db, delivery, at, at), true);
            written.open();
            await ending.wait;
            return true;
          }
          return settle(t.deps.db, delivery, at);
        },
      });
      release.open();
      await write(['a']);
      assert.equal(await loop.step(), 1);
      await written.wait;
      await write(['b']);
      loop.woken();
      assert.equal(await loop.step(), 2, 'the claim takes the retry and the other delivery');
      await settled();
      assert.deepEqual(
        runs.map((run) => run.id),
        ['msg_a', 'msg_b'],
        'the other delivery runs at once; the retry waits for the run before it',
      );
      ending.open();
      loop.stop();
      await loop.drain();
      assert.deepEqual(
        runs.map((run) => run.id),
        ['msg_a', 'msg_b', 'msg_a'],
      );
      assert.notEqual(runs[2]!.lease, runs[0]!.lease);
      assert.equal(await lost(), 0);
    });

    it('rule 5, a switch-off: a delivery in flight is left to its settle; one whose lease ended is failed and its late settle writes nothing', async () => {
      await write(['live', 'lapsed', 'waiting'], { subscriptionId: 'sub_off' });
      const [live] = await claimDeliveries(t.deps.db, { workerId: 'w-live', limit: 1, leaseMs: LEASE_MS, now: START, excludeIds: ['msg_lapsed', 'msg_waiting'] });
      const [lapsed] = await claimDeliveries(t.deps.db, { workerId: 'w-lapsed', limit: 1, leaseMs: 10, now: START, excludeIds: ['msg_live', 'msg_waiting'] });
      assert.equal(live?.id, 'msg_live');
      assert.equal(lapsed?.id, 'msg_lapsed');
      const failed = await failPendingOf(t.deps.db, 'sub_off', 'switched off', START + 100);
      assert.deepEqual(failed.sort(), ['msg_lapsed', 'msg_waiting']);
      assert.equal(await settle(t.deps.db, lapsed, START + 200), false, "the lapsed holder's late settle writes nothing");
      assert.equal(await settle(t.deps.db, live, START + 200), true, 'the live holder settles its attempt');
      assert.deepEqual(
        (await rows()).map((row) => [row.id, row.status, row.lease]),
        [
          ['msg_lapsed', 'failed', null],
          ['msg_live', 'succeeded', null],
          ['msg_waiting', 'failed', null],
        ],
      );
    });

    it('rule 5, a manual retry of a delivery in flight is no write: the attempt under way is not doubled', async () => {
      await write(['a']);
      const [held] = await otherClaim(START);
      await retryNow(t.deps.db, 'msg_a', START + 1);
      assert.deepEqual(
        (await rows()).map((row) => [row.lease, Number(row.run_at)]),
        [[held!.lease, 0]],
      );
      assert.deepEqual(await otherClaim(START + 2), [], 'nothing is due twice');
    });

    it('rule 1, a listen copy: never due, so no claim takes it', async () => {
      const { loop } = loopOn();
      await write(['copy'], { runAt: null, url: listenUrl('lis_1') });
      assert.equal(await loop.step(), 0);
      assert.deepEqual(await otherClaim(START + LEASE_MS), []);
      loop.stop();
      await loop.drain();
    });

    it('the bookkeeping refuses what would break a rule: one delivery held twice, a claim under two leases, an ended lease, a delivery it was told to leave out', () => {
      const held = new HeldDeliveries();
      const delivery: Delivery = { id: 'msg_1', accountId: 'acc', runs: 1, lease: 'w:1', leaseUntil: 10, createdAt: 0 };
      held.hold(delivery);
      assert.throws(() => held.hold({ ...delivery }), /already running in this process/);
      assert.deepEqual(held.lapsedBy(9), []);
      assert.deepEqual(held.lapsedBy(10), ['msg_1']);
      held.release(delivery);
      assert.equal(held.size, 0);
      assert.throws(() => assertClaimed([delivery, { ...delivery, id: 'msg_2', lease: 'w:2' }], 0, []), /two leases/);
      assert.throws(() => assertClaimed([delivery], 10, []), /lease that had ended/);
      assert.throws(() => assertClaimed([delivery], 0, ['msg_1']), /may go on/);
      assert.doesNotThrow(() => assertClaimed([delivery], 9, []));
    });
  });
}
