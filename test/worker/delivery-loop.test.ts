import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { createQueueMetrics } from '../../src/metrics.js';
import { enqueueJobs, JobSignals } from '../../src/storage/queue/index.js';
import { createDeliveryLoop } from '../../src/worker/delivery-loop.js';
import type { JobHandlers } from '../../src/worker/job-handlers.js';
import type { WorkerContext } from '../../src/worker/worker-context.js';
import { testDialects } from '../support/databases.js';
import { gate } from '../support/receivers.js';
import { startTestDatabase, type TestDatabase } from '../support/test-database.js';

for (const dialect of testDialects()) {
  describe(`delivery loop slots [${dialect}]`, () => {
    let t: TestDatabase;
    before(async () => {
      t = await startTestDatabase(dialect);
    });
    beforeEach(async () => {
      await t.deps.db.deleteFrom('jobs').execute();
    });
    after(() => t.close());

    /** A loop of `concurrency` slots whose jobs hold their slot until `release` opens; counts how many hold one at once. */
    function loopOf(concurrency: number) {
      const release = gate();
      /** Jobs (by payload) released on their own, before `release`. */
      const early = new Map<unknown, ReturnType<typeof gate>>();
      let running = 0;
      let most = 0;
      const handlers: JobHandlers = {
        call: {
          mode: 'standalone',
          async handle(job, _ctx, control) {
            running += 1;
            most = Math.max(most, running);
            const own = gate();
            early.set(job.payload, own);
            await Promise.race([release.wait, own.wait]);
            running -= 1;
            control.externalWorkDone();
          },
        },
      };
      const log = t.deps.log;
      const context: WorkerContext = {
        deps: { db: t.deps.db, log, clock: Date.now, signals: new JobSignals() },
        handlers,
        workerId: 'w-loop-test',
        leaseMs: 60_000,
        log,
        metrics: createQueueMetrics(),
        job: { db: t.deps.db, log, clock: Date.now, workerId: 'w-loop-test' },
      };
      const loop = createDeliveryLoop(context, { kinds: ['call'], concurrency });
      return { loop, release, most: () => most, running: () => running, releaseOne: (payload: unknown) => early.get(payload)!.open() };
    }

    it('a claim leaves alone the room promised to a batch in flight: the adopted jobs and the claimed ones fit the slots together', async () => {
      const { loop, release, most } = loopOf(8);
      const due = (from: number, count: number) => Array.from({ length: count }, (_, i) => ({ kind: 'call', payload: from + i, groupKey: 'acc_flood', runAt: 0 }));
      // The account holds 4 of the 8 slots: no longer a light account, the reserve is not for it.
      await enqueueJobs(t.deps.db, due(0, 4));
      assert.equal(await loop.step(), 4);
      await enqueueJobs(t.deps.db, due(4, 16));
      // A batch begins: its offer promises the 4 free slots to the deliveries it will enqueue.
      const offer = loop.offer()!;
      assert.equal(offer.room, 4);
      assert.equal(await loop.step(), 0, 'no slot is free while the free ones are promised');
      // The batch enqueues 4 deliveries (taken under the offer), commits, and its worker starts them.
      await enqueueJobs(
        t.deps.db,
        Array.from({ length: 4 }, (_, i) => ({ kind: 'call', payload: `batch-${i}`, groupKey: 'acc_flood' })),
        { leaseTo: offer },
      );
      assert.equal(offer.taken.length, 4);
      loop.adopt(offer, true);
      assert.equal(await loop.step(), 0, 'the slots are all held now');
      await new Promise((resolve) => setImmediate(resolve));
      assert.equal(most(), 8, `${most()} jobs held a slot at once in a loop of 8`);
      loop.stop();
      release.open();
      await loop.drain();
    });

    it('an offer leaves alone the room of a claim in flight: the claimed jobs and the adopted ones fit the slots together', async () => {
      const { loop, release, most } = loopOf(8);
      await enqueueJobs(
        t.deps.db,
        Array.from({ length: 20 }, (_, i) => ({ kind: 'call', payload: i, groupKey: 'acc_flood', runAt: 0 })),
      );
      // A claim for the 8 free slots is on its way to the database when a batch begins.
      const claiming = loop.step();
      const offer = loop.offer()!;
      assert.equal(offer.room, 0, "the free slots are the claim's");
      await enqueueJobs(
        t.deps.db,
        Array.from({ length: 4 }, (_, i) => ({ kind: 'call', payload: `batch-${i}`, groupKey: 'acc_flood' })),
        { leaseTo: offer },
      );
      assert.equal(offer.taken.length, 0);
      assert.equal(offer.declined, 4, 'the batch declines its deliveries: a claim takes them when slots free up');
      loop.adopt(offer, true);
      assert.equal(await claiming, 8);
      await new Promise((resolve) => setImmediate(resolve));
      assert.equal(most(), 8, `${most()} jobs held a slot at once in a loop of 8`);
      loop.stop();
      release.open();
      await loop.drain();
    });

    it('an offer that took nothing gives its room back to the next claim', async () => {
      const { loop, release, running } = loopOf(8);
      await enqueueJobs(
        t.deps.db,
        Array.from({ length: 20 }, (_, i) => ({ kind: 'call', payload: i, groupKey: 'acc_flood', runAt: 0 })),
      );
      const offer = loop.offer()!;
      loop.adopt(offer, true);
      assert.equal(await loop.step(), 8);
      await new Promise((resolve) => setImmediate(resolve));
      assert.equal(running(), 8);
      loop.stop();
      release.open();
      await loop.drain();
    });

    it("a light account's freed slot lets its next job be claimed at once, without waiting for a wake-up", async () => {
      // 32 slots and a reserve of 8 for light accounts.
      const { loop, release, running, releaseOne } = loopOf(32);
      await enqueueJobs(
        t.deps.db,
        Array.from({ length: 32 }, (_, i) => ({ kind: 'call', payload: `flood-${i}`, groupKey: 'acc_flood', runAt: 0 })),
      );
      assert.equal(await loop.step(), 32, 'the flooding account alone takes every slot');
      await enqueueJobs(
        t.deps.db,
        Array.from({ length: 6 }, (_, i) => ({ kind: 'call', payload: `light-${i}`, groupKey: 'acc_light', runAt: 1 + i })),
      );
      loop.woken();
      assert.equal(await loop.step(), 4, "the light account gets the reserve, up to a light account's 4 slots");
      assert.equal(await loop.step(), 0, 'holding 4, it is not light any more: the reserve has room, but nobody light has jobs');
      await new Promise((resolve) => setImmediate(resolve));
      releaseOne('light-0');
      await new Promise((resolve) => setTimeout(resolve, 20));
      assert.equal(await loop.step(), 2, 'light again: its 2 jobs left are claimed by the next step, no wake-up needed');
      await new Promise((resolve) => setImmediate(resolve));
      assert.equal(running(), 32 + 5);
      loop.stop();
      release.open();
      await loop.drain();
    });
  });
}
