import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { claimDueJobs, completeHeldJobs, enqueueJobs, leaseOffer, postponeHeldJobs } from '../../src/storage/queue/index.js';
import { testDialects } from '../support/databases.js';
import { startTestDatabase, type TestDatabase } from '../support/test-database.js';

/** postponeHeldJobs: a job given back unrun under its lease, its claim not counted as a run. */
for (const dialect of testDialects()) {
  describe(`postponing held jobs [${dialect}]`, () => {
    let t: TestDatabase;
    const claim = (workerId: string, now: number, limit = 10) => claimDueJobs(t.deps.db, { workerId, kinds: ['test'], limit, leaseMs: 1000, now });
    const rows = async () =>
      new Map(
        (await t.deps.db.selectFrom('jobs').select(['id', 'payload', 'run_at', 'attempts', 'locked_by', 'locked_at', 'last_error', 'state']).execute()).map((row) => [JSON.parse(row.payload) as string, row]),
      );

    before(async () => {
      t = await startTestDatabase(dialect);
    });
    beforeEach(async () => {
      await t.deps.db.deleteFrom('jobs').execute();
    });
    after(() => t.close());

    it('sets run_at, releases the lease and takes back the claim\'s attempt, in one call for many jobs', async () => {
      await enqueueJobs(t.deps.db, [
        { kind: 'test', payload: 'a', runAt: 0 },
        { kind: 'test', payload: 'b', runAt: 0 },
        { kind: 'test', payload: 'c', runAt: 0 },
      ]);
      const claimed = await claim('w1', 1_000);
      assert.ok(claimed.every((job) => job.attempts === 1), 'the claim counted a run');
      const [a, b] = claimed.filter((job) => job.payload !== 'c');
      const postponed = await postponeHeldJobs(t.deps.db, [{ job: a!, runAt: 5_000 }, { job: b!, runAt: 6_000.4 }], { note: 'waiting', now: 1_100 });
      assert.deepEqual([...postponed].sort(), [a!.id, b!.id].sort());

      const after = await rows();
      for (const [payload, runAt] of [['a', 5_000], ['b', 6_000]] as const) {
        assert.deepEqual(after.get(payload), { id: after.get(payload)!.id, payload: JSON.stringify(payload), run_at: runAt, attempts: 0, locked_by: null, locked_at: null, last_error: 'waiting', state: 'pending' });
      }
      const c = claimed.find((job) => job.payload === 'c')!;
      assert.equal(after.get('c')!.locked_by, c.lease, 'a job not in the call is left alone');
      await completeHeldJobs(t.deps.db, [c]);

      assert.deepEqual(await claim('w2', 4_999), [], 'not due before its run_at');
      const again = await claim('w2', 5_000);
      assert.deepEqual(again.map((job) => [job.payload, job.attempts]), [['a', 1]], 'claimed again: its first counted run, not its second');
      await completeHeldJobs(t.deps.db, again);
      // Postponed again and again, it never runs out of attempts.
      for (let i = 0; i < 30; i++) {
        const [job, ...others] = await claim('w2', 10_000 + i);
        assert.deepEqual([job!.payload, job!.attempts, others.length], ['b', 1, 0]);
        assert.equal((await postponeHeldJobs(t.deps.db, [{ job: job!, runAt: 10_000 + i + 1 }], { note: 'waiting' })).size, 1);
      }
    });

    it('a job handed to a worker at enqueue (leaseTo) is postponed the same way', async () => {
      const offer = leaseOffer(new Set(['test']), { token: 'w1:1:abc', until: 2_000 }, 1);
      await enqueueJobs(t.deps.db, [{ kind: 'test', payload: 'offered' }], { now: 1_000, leaseTo: offer });
      const [job] = offer.taken;
      assert.equal(job!.attempts, 1);
      assert.equal((await postponeHeldJobs(t.deps.db, [{ job: job!, runAt: 3_000 }], { note: 'waiting', now: 1_000 })).size, 1);
      assert.deepEqual((await claim('w2', 3_000)).map((j) => [j.payload, j.attempts]), [['offered', 1]]);
    });

    it('a lost lease writes nothing: the job stays with the worker that took it over', async () => {
      await enqueueJobs(t.deps.db, [
        { kind: 'test', payload: 'lost', runAt: 0 },
        { kind: 'test', payload: 'kept', runAt: 0 },
      ]);
      const first = await claim('w1', 1_000);
      const lost = first.find((job) => job.payload === 'lost')!;
      const kept = first.find((job) => job.payload === 'kept')!;
      // w1's lease ends; w2 takes the job over (only the one: limit 1, oldest run_at first, both 2_000).
      await t.deps.db.updateTable('jobs').set({ run_at: 1_500 }).where('id', '=', lost.id).execute();
      const [takenOver] = await claim('w2', 1_600, 1);
      assert.equal(takenOver!.id, lost.id);
      const before = (await rows()).get('lost');

      const postponed = await postponeHeldJobs(t.deps.db, [{ job: lost, runAt: 9_000 }, { job: kept, runAt: 9_000 }], { note: 'waiting', now: 1_700 });
      assert.deepEqual([...postponed], [kept.id], 'only the job still held');
      assert.deepEqual((await rows()).get('lost'), before, 'the taken-over job is untouched: run_at, attempts, lease');
      assert.equal(before!.locked_by, takenOver!.lease);
      assert.equal(before!.attempts, 2);
      assert.deepEqual(await postponeHeldJobs(t.deps.db, [], { note: 'waiting' }), new Set());
    });
  });
}
