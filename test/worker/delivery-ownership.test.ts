import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { createQueueMetrics } from '../../src/metrics.js';
import { claimDueJobs, completeHeldJobs, enqueueJobs, extendHeldLeases, failHeldJob, JobSignals, type ClaimedJob } from '../../src/storage/queue/index.js';
import { createDeliveryLoop } from '../../src/worker/delivery-loop.js';
import { HeldDeliveries } from '../../src/worker/delivery-ownership.js';
import type { JobHandlers } from '../../src/worker/job-handlers.js';
import type { WorkerContext } from '../../src/worker/worker-context.js';
import { testDialects } from '../support/databases.js';
import { gate } from '../support/receivers.js';
import { startTestDatabase, type TestDatabase } from '../support/test-database.js';

/**
 * The ownership rules of delivery-ownership.ts, each interleaving forced with a clock the test
 * moves (leases of a minute, so the heartbeat never runs): a renewal too late for its lease, a
 * hand-off that commits after its lease ended, a claim while a run is settling. In each, the
 * delivery runs once in this process, and a holder whose lease was taken over writes nothing.
 */
const LEASE_MS = 60_000;

for (const dialect of testDialects()) {
  describe(`delivery ownership [${dialect}]`, () => {
    let t: TestDatabase;
    before(async () => {
      t = await startTestDatabase(dialect);
    });
    beforeEach(async () => {
      await t.deps.db.deleteFrom('jobs').execute();
    });
    after(() => t.close());

    /**
     * A delivery loop on a clock the test moves. Each run waits for `release` (or for its own
     * gate), then either returns (the loop settles it) or, with `settle`, settles it itself.
     */
    function loopOn(options: { settle?: (job: ClaimedJob) => Promise<void> } = {}) {
      let now = 1_000_000;
      const release = gate();
      const runs: ClaimedJob[] = [];
      const handlers: JobHandlers = {
        call: {
          mode: 'standalone',
          async handle(job, _ctx, control) {
            runs.push(job);
            await release.wait;
            control.externalWorkDone();
            if (!options.settle) return;
            await options.settle(job);
            return 'settled';
          },
        },
      };
      const log = t.deps.log;
      const metrics = createQueueMetrics();
      const context: WorkerContext = {
        deps: { db: t.deps.db, log, clock: () => now, signals: new JobSignals() },
        handlers,
        workerId: 'w-owner',
        leaseMs: LEASE_MS,
        log,
        metrics,
        job: { db: t.deps.db, log, clock: () => now, workerId: 'w-owner' },
      };
      const loop = createDeliveryLoop(context, { kinds: ['call'], concurrency: 8, clock: () => now });
      const lost = async () => (await metrics.leasesLost.get()).values.reduce((sum, value) => sum + value.value, 0);
      return { loop, release, runs, lost, now: () => now, advance: (ms: number) => (now += ms) };
    }

    const rows = () => t.deps.db.selectFrom('jobs').select(['id', 'locked_by', 'run_at']).execute();
    const settled = () => new Promise((resolve) => setTimeout(resolve, 20));

    it('late renewal: a lease that ended while this process runs the job is not claimed back by it; another worker takes it and the late outcome writes nothing', async () => {
      const { loop, release, runs, lost, now, advance } = loopOn();
      await enqueueJobs(t.deps.db, [{ kind: 'call', payload: 1, runAt: 0 }]);
      assert.equal(await loop.step(), 1);
      const [first] = runs as [ClaimedJob];
      // The renewal never came: the lease has ended, the run goes on.
      advance(LEASE_MS + 1);
      loop.woken();
      assert.equal(await loop.step(), 0, 'its own claim leaves the job alone');
      assert.equal(runs.length, 1);
      const [taken] = await claimDueJobs(t.deps.db, { workerId: 'w-other', kinds: ['call'], limit: 10, leaseMs: LEASE_MS, now: now() });
      assert.equal(taken?.id, first.id, 'another worker takes the job over');
      // The late renewal renews nothing, and leaves the lease as this process knew it.
      assert.equal(await extendHeldLeases(t.deps.db, [first], now() + LEASE_MS, now()), 0);
      assert.equal(first.leaseUntil, 1_000_000 + LEASE_MS);
      release.open();
      loop.stop();
      await loop.drain();
      assert.equal(await lost(), 1, 'the late outcome is counted lost');
      assert.deepEqual(
        (await rows()).map((row) => row.locked_by),
        [taken.lease],
        'and written nowhere: the new holder still holds the job',
      );
      assert.equal((await completeHeldJobs(t.deps.db, [taken])).size, 1, 'the new holder settles it');
    });

    it('late renewal that nobody took over: the run settles under the lease it has, once', async () => {
      const { loop, release, runs, lost, advance } = loopOn();
      await enqueueJobs(t.deps.db, [{ kind: 'call', payload: 1, runAt: 0 }]);
      assert.equal(await loop.step(), 1);
      advance(LEASE_MS + 1);
      loop.woken();
      assert.equal(await loop.step(), 0);
      release.open();
      loop.stop();
      await loop.drain();
      assert.equal(runs.length, 1);
      assert.equal(await lost(), 0);
      assert.deepEqual(await rows(), []);
    });

    it('hand-off after its lease ended: the batch commits too late, the job is not started from the hand-off, and the next claim runs it once', async () => {
      const { loop, release, runs, now, advance } = loopOn();
      const offer = loop.offer()!;
      await enqueueJobs(t.deps.db, [{ kind: 'call', payload: 1 }], { now: now(), leaseTo: offer });
      assert.equal(offer.taken.length, 1);
      // The batch's commit came after the end of the lease its insert wrote (a stalled event loop, a slow disk).
      advance(LEASE_MS + 1);
      loop.adopt(offer, true);
      await settled();
      assert.equal(runs.length, 0, 'the hand-off did not start it');
      assert.equal(await loop.step(), 1, 'a claim takes it, as it would for any worker');
      assert.equal(runs.length, 1);
      assert.notEqual(runs[0]!.lease, offer.lease.token);
      release.open();
      loop.stop();
      await loop.drain();
      assert.equal(runs.length, 1);
      assert.deepEqual(await rows(), []);
    });

    it('hand-off within its lease: started at once, and no claim takes it while the lease lasts', async () => {
      const { loop, release, runs, now, advance } = loopOn();
      const offer = loop.offer()!;
      await enqueueJobs(t.deps.db, [{ kind: 'call', payload: 1 }], { now: now(), leaseTo: offer });
      loop.adopt(offer, true);
      await settled();
      assert.equal(runs.length, 1);
      advance(LEASE_MS - 1);
      loop.woken();
      assert.equal(await loop.step(), 0);
      assert.deepEqual(await claimDueJobs(t.deps.db, { workerId: 'w-other', kinds: ['call'], limit: 10, leaseMs: LEASE_MS, now: now() }), []);
      release.open();
      loop.stop();
      await loop.drain();
      assert.equal(runs.length, 1);
      assert.deepEqual(await rows(), []);
    });

    it('claim during settle: a claim made while a run whose lease ended is recording its outcome does not start it again', async () => {
      const settling = gate();
      const inSettle = gate();
      const { loop, release, runs, lost, advance } = loopOn({
        settle: async (job) => {
          inSettle.open();
          await settling.wait;
          assert.equal((await completeHeldJobs(t.deps.db, [job])).size, 1);
        },
      });
      await enqueueJobs(t.deps.db, [{ kind: 'call', payload: 1, runAt: 0 }]);
      assert.equal(await loop.step(), 1);
      release.open();
      await inSettle.wait;
      advance(LEASE_MS + 1);
      loop.woken();
      assert.equal(await loop.step(), 0, 'the settling run still owns the job here');
      settling.open();
      loop.stop();
      await loop.drain();
      assert.equal(runs.length, 1);
      assert.equal(await lost(), 0);
      assert.deepEqual(await rows(), []);
    });

    it('claim after settle: a claim that takes a job whose run here wrote a retry due at once but has not ended starts the new run after it, and its other jobs at once', async () => {
      const written = gate();
      const ending = gate();
      const { loop, release, runs, lost, now } = loopOn({
        settle: async (job) => {
          if (job.payload === 1 && runs.filter((run) => run.id === job.id).length === 1) {
            // The retry is written and visible to any claim; this run has not ended here yet.
            assert.equal(await failHeldJob(t.deps.db, job, new Error('down'), { now: now(), retryAt: now() }), 'retrying');
            written.open();
            await ending.wait;
            return;
          }
          assert.equal((await completeHeldJobs(t.deps.db, [job])).size, 1);
        },
      });
      release.open();
      await enqueueJobs(t.deps.db, [{ kind: 'call', payload: 1, runAt: 0 }]);
      assert.equal(await loop.step(), 1);
      await written.wait;
      await enqueueJobs(t.deps.db, [{ kind: 'call', payload: 2, runAt: 0 }]);
      loop.woken();
      assert.equal(await loop.step(), 2, 'the claim takes the retry and the other job');
      await settled();
      assert.deepEqual(
        runs.map((run) => run.payload),
        [1, 2],
        'the other job runs at once; the retry waits for the run before it',
      );
      ending.open();
      loop.stop();
      await loop.drain();
      assert.deepEqual(
        runs.map((run) => run.payload),
        [1, 2, 1],
      );
      assert.notEqual(runs[2]!.lease, runs[0]!.lease);
      assert.equal(await lost(), 0);
      assert.deepEqual(await rows(), []);
    });

    it('a process never holds one job twice: the bookkeeping refuses it', () => {
      const held = new HeldDeliveries();
      const job = { id: 'job_1', leaseUntil: 10 } as ClaimedJob;
      held.hold(job);
      assert.throws(() => held.hold({ ...job }), /already running in this process/);
      assert.deepEqual(held.lapsedBy(9), []);
      assert.deepEqual(held.lapsedBy(10), ['job_1']);
      held.release(job);
      assert.equal(held.size, 0);
    });
  });
}
