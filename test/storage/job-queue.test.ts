// needs: database
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { sql } from 'kysely';
import { claimDueJobs, completeHeldJobs, enqueueJobs, failHeldJob, retryDelayMs, takeDueJobs, TRANSACTION_LEASE, type NewJob } from '../../src/storage/queue/index.js';
import { dueJobs } from '../../src/storage/queue/due-jobs.js';
import { dialectOf } from '../../src/storage/dialect.js';
import type { Executor } from '../../src/storage/database.js';

/** One job: its id. */
const enqueueJob = async (db: Executor, job: NewJob) => (await enqueueJobs(db, [job]))[0];
import { openStorage, type Storage } from '../../src/storage/database.js';
import { migrateToLatest } from '../../src/storage/migrations/index.js';
import { testDialects } from '../support/databases.js';
import { startTestDatabase, type TestDatabase } from '../support/test-database.js';

describe('retry schedule of a failed job (pure)', () => {
  it('doubles from 1 s and caps at 10 minutes', () => {
    assert.deepEqual([1, 2, 3, 4].map(retryDelayMs), [1000, 2000, 4000, 8000]);
    assert.equal(retryDelayMs(30), 600_000);
  });
});

for (const dialect of testDialects()) {
  describe(`job queue operations [${dialect}]`, () => {
    let t: TestDatabase;
    const claim = (workerId: string, now: number, limit = 10, kinds = ['test']) => claimDueJobs(t.deps.db, { workerId, kinds, limit, leaseMs: 1000, now });

    before(async () => {
      t = await startTestDatabase(dialect);
    });
    beforeEach(async () => {
      await t.deps.db.deleteFrom('jobs').execute();
    });
    after(() => t.close());

    it('claims due jobs oldest run_at first, only the asked kinds, and leases them', async () => {
      await enqueueJobs(t.deps.db, [
        { kind: 'test', payload: { n: 2 }, runAt: 200 },
        { kind: 'test', payload: { n: 1 }, runAt: 100 },
        { kind: 'test', payload: { n: 3 }, runAt: 5_000 },
        { kind: 'other', payload: { n: 4 }, runAt: 100 },
      ]);
      const claimed = await claim('a', 1_000);
      assert.deepEqual(claimed.map((j) => (j.payload as { n: number }).n).sort(), [1, 2]);
      assert.ok(claimed.every((j) => j.attempts === 1 && j.leaseUntil === 2_000));
      assert.deepEqual(await claim('b', 1_500), [], 'leased jobs are not claimed again before the lease ends');
      const retaken = await claim('b', 2_000);
      assert.equal(retaken.length, 2, 'an expired lease makes the job due again');
      assert.ok(retaken.every((j) => j.attempts === 2));
    });

    it('only the current lease holder completes or fails a job', async () => {
      await enqueueJob(t.deps.db, { kind: 'test', payload: {}, runAt: 0 });
      const [first] = await claim('a', 1_000);
      const [second] = await claim('b', 2_500);
      assert.equal((await completeHeldJobs(t.deps.db, [first!])).size, 0);
      assert.equal(await failHeldJob(t.deps.db, first!, new Error('x')), 'lost');
      assert.deepEqual([...(await completeHeldJobs(t.deps.db, [second!]))], [second!.id]);
      assert.deepEqual(await t.deps.db.selectFrom('jobs').select('id').execute(), []);
    });

    it('a failed attempt is retried on the schedule; after max attempts the job is kept as failed and never claimed', async () => {
      await enqueueJob(t.deps.db, { kind: 'test', payload: {}, runAt: 0, maxAttempts: 2 });
      const [job] = await claim('a', 1_000);
      assert.equal(await failHeldJob(t.deps.db, job!, new Error('boom'), { now: 1_000 }), 'retrying');
      assert.deepEqual(await claim('a', 1_000 + retryDelayMs(1) - 1), []);
      const [again] = await claim('a', 1_000 + retryDelayMs(1));
      assert.equal(again!.attempts, 2);
      assert.equal(again!.lastError, 'boom');
      assert.equal(await failHeldJob(t.deps.db, again!, new Error('boom twice')), 'failed');
      assert.deepEqual(await claim('a', Number.MAX_SAFE_INTEGER), []);
      const row = await t.deps.db.selectFrom('jobs').selectAll().executeTakeFirstOrThrow();
      assert.deepEqual([row.state, row.last_error, row.locked_by], ['failed', 'boom twice', null]);
    });

    it('completeHeldJobs deletes the jobs still held under their lease, in one statement, and says which', async () => {
      await enqueueJobs(
        t.deps.db,
        Array.from({ length: 300 }, (_, n) => ({ kind: 'test', payload: { n }, runAt: 0 })),
      );
      const first = await claim('a', 1_000, 300);
      assert.equal(first.length, 300);
      // 100 of them are taken over by another worker after the first one's lease ended.
      await t.deps.db
        .updateTable('jobs')
        .set({ run_at: 0 })
        .where(
          'id',
          'in',
          first.slice(0, 100).map((j) => j.id),
        )
        .execute();
      const takenOver = await claim('b', 1_000, 100);
      assert.equal(takenOver.length, 100);
      const held = await completeHeldJobs(t.deps.db, first);
      assert.equal(held.size, 200);
      assert.ok(
        first.slice(100).every((job) => held.has(job.id)),
        'the jobs still held are done',
      );
      assert.ok(
        first.slice(0, 100).every((job) => !held.has(job.id)),
        'the taken-over ones are not',
      );
      const left = await t.deps.db.selectFrom('jobs').select(['id', 'locked_by']).execute();
      assert.deepEqual(new Set(left.map((row) => row.id)), new Set(takenOver.map((job) => job.id)));
      assert.equal((await completeHeldJobs(t.deps.db, takenOver)).size, 100);
      assert.equal((await completeHeldJobs(t.deps.db, [])).size, 0);
    });

    it('failJob with retryAt schedules the next attempt exactly then (notification retry interval)', async () => {
      await enqueueJob(t.deps.db, { kind: 'test', payload: {}, runAt: 0, maxAttempts: 5 });
      const [job] = await claim('a', 1_000);
      await failHeldJob(t.deps.db, job!, 'callback answered 500', { retryAt: 1_000 + 3 * 3_600_000 });
      assert.deepEqual(await claim('a', 1_000 + 3 * 3_600_000 - 1), []);
      assert.equal((await claim('a', 1_000 + 3 * 3_600_000)).length, 1);
    });

    it('concurrent claimers never get the same job', async () => {
      await enqueueJobs(
        t.deps.db,
        Array.from({ length: 300 }, (_, i) => ({ kind: 'test', payload: i, runAt: 0 })),
      );
      // A second connection pool on PostgreSQL makes the claims truly concurrent (SKIP LOCKED).
      const claims = await Promise.all(Array.from({ length: 6 }, (_, i) => claimDueJobs(t.deps.db, { workerId: `w${i}`, kinds: ['test'], limit: 40, leaseMs: 60_000, now: 1_000 })));
      const ids = claims.flat().map((j) => j.id);
      assert.equal(ids.length, 240);
      assert.equal(new Set(ids).size, 240);
    });

    if (dialect === 'postgres') {
      it('a claim leases at most its limit whatever plan PostgreSQL picks: the due jobs are read once', async () => {
        await enqueueJobs(
          t.deps.db,
          Array.from({ length: 20 }, (_, i) => ({ kind: 'test', payload: i, runAt: i })),
        );
        // A nested loop that runs a locking `id in (…)` subquery again per row leases every due job
        // (deliveries.test.ts has the same for the notification rows).
        const claimed = await t.deps.db.transaction().execute(async (tx) => {
          for (const setting of ['enable_hashjoin', 'enable_mergejoin', 'enable_material', 'enable_hashagg', 'enable_sort']) await sql.raw(`set local ${setting} = off`).execute(tx);
          return claimDueJobs(tx, { workerId: 'w', kinds: ['test'], limit: 6, leaseMs: 60_000, now: 1_000 });
        });
        assert.deepEqual(
          claimed.map((job) => job.payload),
          [0, 1, 2, 3, 4, 5],
        );
        assert.equal((await t.deps.db.selectFrom('jobs').select('id').where('locked_by', 'is not', null).execute()).length, 6);
      });
    }

    it('takeDueJobs holds due jobs for the transaction that completes them, writing no lease', async () => {
      await enqueueJobs(t.deps.db, [
        { kind: 'test', payload: 2, runAt: 200 },
        { kind: 'test', payload: 1, runAt: 100 },
        { kind: 'test', payload: 3, runAt: 5_000 },
        { kind: 'other', payload: 4, runAt: 100 },
      ]);
      const taken = await t.deps.db.transaction().execute(async (tx) => {
        const jobs = await takeDueJobs(tx, { kinds: ['test'], limit: 10, now: 1_000 });
        const rows = await tx
          .selectFrom('jobs')
          .select(['locked_by', 'attempts'])
          .where(
            'id',
            'in',
            jobs.map((j) => j.id),
          )
          .execute();
        assert.deepEqual(
          rows.map((r) => [r.locked_by, r.attempts]),
          [
            [null, 0],
            [null, 0],
          ],
          'no lease row written',
        );
        assert.equal((await completeHeldJobs(tx, jobs)).size, 2, 'completed by the transaction that holds them');
        return jobs;
      });
      assert.deepEqual(taken.map((j) => j.payload).sort(), [1, 2]);
      assert.equal(taken[0]!.lease, TRANSACTION_LEASE);
      const left = await t.deps.db.selectFrom('jobs').select('kind').orderBy('kind').execute();
      assert.deepEqual(
        left.map((r) => r.kind),
        ['other', 'test'],
        'completed jobs are gone, the others stay',
      );
    });

    it('completing jobs taken by a transaction says which were still there', async () => {
      await enqueueJobs(t.deps.db, [{ kind: 'test', payload: 1, runAt: 0 }]);
      const held = await t.deps.db.transaction().execute(async (tx) => {
        const jobs = await takeDueJobs(tx, { kinds: ['test'], limit: 10, now: 1_000 });
        await tx.deleteFrom('jobs').where('id', '=', jobs[0]!.id).execute();
        return completeHeldJobs(tx, jobs);
      });
      assert.equal(held.size, 0, 'the worker then rolls its batch back (transactional-loop.ts)');
    });

    it("claiming reads its kinds' due range of the partial index: 50,000 future jobs, and 50,000 due jobs of another kind, are not read", async () => {
      const now = Date.now();
      // Future jobs of the claimed kind, and older due jobs of another kind (another loop's backlog).
      if (dialect === 'sqlite') {
        await sql`with recursive n(i) as (select 1 union all select i + 1 from n where i < 50000)
          insert into jobs (id, kind, payload, state, run_at, attempts, max_attempts, created_at, updated_at)
          select 'job_bulk_' || i, 'test', '{}', 'pending', ${now} + 3600000 + i, 0, 5, ${now}, ${now} from n
          union all select 'job_other_' || i, 'other', '{}', 'pending', ${now} - 3600000 + i, 0, 5, ${now}, ${now} from n`.execute(t.deps.db);
      } else {
        await sql`insert into jobs (id, kind, payload, state, run_at, attempts, max_attempts, created_at, updated_at)
          select 'job_bulk_' || i, 'test', '{}', 'pending', ${now}::bigint + 3600000 + i, 0, 5, ${now}::bigint, ${now}::bigint from generate_series(1, 50000) i
          union all select 'job_other_' || i, 'other', '{}', 'pending', ${now}::bigint - 3600000 + i, 0, 5, ${now}::bigint, ${now}::bigint from generate_series(1, 50000) i`.execute(t.deps.db);
        await sql`analyze jobs`.execute(t.deps.db);
      }
      // The plan of the very `with` clause the claim and the batch lock use.
      for (const kinds of [['test'], ['test', 'another']]) {
        const due = dueJobs({ kinds, limit: 10, now, dialect: dialectOf(t.deps.db) });
        const plan =
          dialect === 'sqlite'
            ? (await sql<{ detail: string }>`explain query plan ${due} select id from due`.execute(t.deps.db)).rows.map((r) => r.detail)
            : (await sql<{ 'QUERY PLAN': string }>`explain ${due} select id from due`.execute(t.deps.db)).rows.map((r) => r['QUERY PLAN']);
        assert.match(plan.join('\n'), /jobs_pending_kind_run_at_idx/, `kinds ${kinds.join(', ')}: ${plan.join(' | ')}`);
      }
      await enqueueJob(t.deps.db, { kind: 'test', payload: 'due', runAt: now - 1 });
      const claimed = await claim('a', now);
      assert.deepEqual(
        claimed.map((j) => j.payload),
        ['due'],
      );
      const locked = await t.deps.db.transaction().execute((tx) => takeDueJobs(tx, { kinds: ['test', 'another'], limit: 10, now: now + 1 }));
      assert.deepEqual(locked, [], 'the claimed job is leased; the other kind is not asked for');
    });
  });
}

/** Cross-process claiming on PostgreSQL: two pools behave like two worker processes. */
for (const dialect of testDialects().filter((d) => d === 'postgres')) {
  describe('FOR UPDATE SKIP LOCKED across connection pools [postgres]', () => {
    let t: TestDatabase;
    let other: Storage;
    before(async () => {
      t = await startTestDatabase(dialect);
      const schema = (await sql<{ s: string }>`select current_schema() as s`.execute(t.deps.db)).rows[0]!.s;
      other = openStorage(t.config.databaseUrl, { schema });
      await migrateToLatest(other.db);
    });
    after(async () => {
      await other.close();
      await t.close();
    });

    it("a job locked by one pool's batch transaction is skipped by the other pool", async () => {
      await t.deps.db.deleteFrom('jobs').execute();
      await enqueueJobs(
        t.deps.db,
        Array.from({ length: 10 }, (_, i) => ({ kind: 'test', payload: i, runAt: 0 })),
      );
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let first: string[] = [];
      const batch = t.deps.db.transaction().execute(async (tx) => {
        first = (await takeDueJobs(tx, { kinds: ['test'], limit: 6, now: 1_000 })).map((j) => j.id);
        await held;
      });
      while (first.length === 0) await new Promise((resolve) => setTimeout(resolve, 10));
      const second = await other.db.transaction().execute(async (tx) => (await takeDueJobs(tx, { kinds: ['test'], limit: 10, now: 1_000 })).map((j) => j.id));
      release();
      await batch;
      assert.equal(second.length, 4);
      assert.equal(new Set([...first, ...second]).size, 10);
      await t.deps.db.deleteFrom('jobs').execute();
    });

    it('two pools claiming at once split the due jobs without overlap', async () => {
      await enqueueJobs(
        t.deps.db,
        Array.from({ length: 200 }, (_, i) => ({ kind: 'test', payload: i, runAt: 0 })),
      );
      const claims = await Promise.all([
        ...Array.from({ length: 4 }, (_, i) => claimDueJobs(t.deps.db, { workerId: `a${i}`, kinds: ['test'], limit: 30, leaseMs: 60_000 })),
        ...Array.from({ length: 4 }, (_, i) => claimDueJobs(other.db, { workerId: `b${i}`, kinds: ['test'], limit: 30, leaseMs: 60_000 })),
      ]);
      const ids = claims.flat().map((j) => j.id);
      assert.equal(ids.length, 200);
      assert.equal(new Set(ids).size, 200);
    });
  });
}
