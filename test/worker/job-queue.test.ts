import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { sql } from 'kysely';
import {
  claimDueJobs,
  completeHeldJobs,
  enqueueJobs,
  extendHeldLeases,
  failHeldJob,
  leaseOffer,
  retryDelayMs,
  takeDueJobs,
  TRANSACTION_LEASE,
  type EnqueueOptions,
  type NewJob,
} from '../../src/storage/queue/index.js';
import { dueJobs } from '../../src/storage/queue/due-jobs.js';
import { dialectOf } from '../../src/storage/dialect.js';
import type { Executor } from '../../src/storage/database.js';

/** One job: its id, or undefined on a dedupe hit. */
const enqueueJob = async (db: Executor, job: NewJob, options?: EnqueueOptions) => (await enqueueJobs(db, [job], options))[0];
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

    it("leaseTo: jobs enqueued with a worker's offer are inserted leased to it, as far as it has room", async () => {
      const now = 10_000;
      const offer = await t.deps.db.transaction().execute(async (tx) => {
        await enqueueJob(tx, { kind: 'test', payload: 'existing', dedupeKey: 'k1' }, { now });
        const handOff = leaseOffer(new Set(['test']), { token: 'w1:7:abc', until: now + 1_000 }, 3);
        await enqueueJobs(
          tx,
          [
            { kind: 'test', payload: 'duplicate', dedupeKey: 'k1' }, // a dedupe hit: not inserted, so not taken
            { kind: 'test', payload: 'a' },
            { kind: 'other', payload: 'other kind' },
            { kind: 'test', payload: 'later', runAt: now + 60_000 },
            { kind: 'test', payload: 'b' },
            { kind: 'test', payload: 'no room' },
          ],
          { now, leaseTo: handOff },
        );
        // The duplicate's place is free again for what the transaction enqueues next.
        await enqueueJob(tx, { kind: 'test', payload: 'c' }, { now, leaseTo: handOff });
        return handOff;
      });
      assert.deepEqual(
        offer.taken.map((job) => [job.payload, job.lease, job.leaseUntil, job.attempts]),
        [
          ['a', 'w1:7:abc', now + 1_000, 1],
          ['b', 'w1:7:abc', now + 1_000, 1],
          ['c', 'w1:7:abc', now + 1_000, 1],
        ],
      );
      assert.equal(offer.declined, 1, 'one due job of the offered kind found no room: someone must claim it');
      const rows = await t.deps.db.selectFrom('jobs').select(['payload', 'locked_by', 'run_at', 'attempts']).orderBy('id').execute();
      const byPayload = new Map(rows.map((row) => [JSON.parse(row.payload) as string, row]));
      assert.deepEqual(byPayload.get('a'), { payload: '"a"', locked_by: 'w1:7:abc', run_at: now + 1_000, attempts: 1 });
      for (const free of ['existing', 'other kind', 'later', 'no room']) assert.equal(byPayload.get(free)!.locked_by, null, free);
      assert.equal(byPayload.has('duplicate'), false);
      const claimable = await claim('b', now + 500);
      assert.deepEqual(claimable.map((job) => job.payload).sort(), ['existing', 'no room'], 'the handed-off jobs are leased; the others are claimable as usual');
      assert.deepEqual([...(await completeHeldJobs(t.deps.db, offer.taken))].sort(), offer.taken.map((job) => job.id).sort(), 'the hand-off lease completes them');
    });

    it('leaseTo: a rollback inserts nothing, though the offer says what it would have taken', async () => {
      const offer = leaseOffer(new Set(['test']), { token: 'w1:2:abc', until: Date.now() + 1_000 }, 5);
      await assert.rejects(
        t.deps.db.transaction().execute(async (tx) => {
          await enqueueJob(tx, { kind: 'test', payload: 'rolled back' }, { leaseTo: offer });
          throw new Error('abort');
        }),
        /abort/,
      );
      assert.equal(offer.taken.length, 1, 'taken inside the transaction…');
      assert.deepEqual(await t.deps.db.selectFrom('jobs').select('payload').execute(), [], '…so the worker starts taken jobs only after a commit: this one never existed');
    });

    it('only the current lease holder completes, fails or extends a job', async () => {
      await enqueueJob(t.deps.db, { kind: 'test', payload: {}, runAt: 0 });
      const [first] = await claim('a', 1_000);
      const [second] = await claim('b', 2_500);
      assert.equal((await completeHeldJobs(t.deps.db, [first!])).size, 0);
      assert.equal(await failHeldJob(t.deps.db, first!, new Error('x')), 'lost');
      assert.equal(await extendHeldLeases(t.deps.db, [first!], 10_000), 0);
      assert.deepEqual([...(await completeHeldJobs(t.deps.db, [second!]))], [second!.id]);
      assert.deepEqual(await t.deps.db.selectFrom('jobs').select('id').execute(), []);
    });

    it('a heartbeat renews the leases still held in one statement and leaves taken-over jobs alone', async () => {
      await enqueueJobs(t.deps.db, [
        { kind: 'test', payload: 1, runAt: 0 },
        { kind: 'test', payload: 2, runAt: 0 },
      ]);
      const mine = await claim('a', 1_000);
      const [takenOver] = await claim('b', 2_500, 1);
      assert.equal(await extendHeldLeases(t.deps.db, mine, 50_000, 2_600), 1);
      const runAt = new Map((await t.deps.db.selectFrom('jobs').select(['id', 'run_at', 'locked_by']).execute()).map((row) => [row.id, row]));
      const kept = mine.find((job) => job.id !== takenOver!.id)!;
      assert.equal(runAt.get(kept.id)!.run_at, 50_000);
      assert.equal(runAt.get(takenOver!.id)!.locked_by, takenOver!.lease, 'the other worker keeps its lease');
      assert.notEqual(runAt.get(takenOver!.id)!.run_at, 50_000);
    });

    if (dialect === 'postgres') {
      it('a heartbeat skips a job whose outcome is being committed instead of waiting for it (no deadlock with that commit)', { timeout: 10_000 }, async () => {
        await enqueueJobs(t.deps.db, [
          { kind: 'test', payload: 1, runAt: 0 },
          { kind: 'test', payload: 2, runAt: 0 },
        ]);
        const jobs = await claim('a', 1_000);
        let release!: () => void;
        const held = new Promise<void>((resolve) => (release = resolve));
        let locked!: () => void;
        const isLocked = new Promise<void>((resolve) => (locked = resolve));
        // The commit of the first job's outcome, open: it holds that row's lock.
        const committing = t.deps.db.transaction().execute(async (tx) => {
          await tx.deleteFrom('jobs').where('id', '=', jobs[0]!.id).execute();
          locked();
          await held;
        });
        await isLocked;
        const renewed = await extendHeldLeases(t.deps.db, jobs, 50_000, 1_100);
        release();
        await committing;
        assert.equal(renewed, 1);
        assert.equal(jobs[1]!.leaseUntil, 50_000);
      });
    }

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

    it('a dedupe key enqueues once', async () => {
      assert.ok(await enqueueJob(t.deps.db, { kind: 'test', payload: 1, dedupeKey: 'k' }));
      assert.equal(await enqueueJob(t.deps.db, { kind: 'test', payload: 2, dedupeKey: 'k' }), undefined);
      assert.equal((await t.deps.db.selectFrom('jobs').select('id').execute()).length, 1);
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
        // (delivery-rows.test.ts has the same for the notification rows).
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

    it('a fair claim leaves out the excluded groups, oldest first among the rest, whatever their ids sort like', async () => {
      // Group keys that sort differently by byte and by a language's collation ('B' < 'a' in bytes).
      await enqueueJobs(t.deps.db, [
        { kind: 'test', payload: 'big-1', runAt: 100, groupKey: 'acc_a' },
        { kind: 'test', payload: 'upper', runAt: 150, groupKey: 'acc_B' },
        { kind: 'test', payload: 'big-2', runAt: 200, groupKey: 'acc_a' },
        { kind: 'test', payload: 'small', runAt: 300, groupKey: 'acc_c' },
        { kind: 'test', payload: 'other', runAt: 400, groupKey: 'acc_b' },
        { kind: 'test', payload: 'nobody', runAt: 500 },
      ]);
      const fair = (exclude: string[], limit = 10) =>
        claimDueJobs(t.deps.db, { workerId: 'w', kinds: ['test'], limit, leaseMs: 60_000, now: 1_000, excludeGroups: exclude }).then((jobs) => jobs.map((job) => job.payload));
      assert.deepEqual(await fair(['acc_a', 'acc_b'], 2), ['upper', 'small'], 'by run_at among the others; a job of no group is not in any range');
      assert.deepEqual(await fair(['acc_a']), ['other']);
      assert.deepEqual(await fair([]), ['big-1', 'big-2', 'nobody'], 'no exclusion: the plain claim, anyone');
    });

    it("a fair claim does not read the excluded groups' backlog: 50,000 due jobs of one account are stepped over by index", async () => {
      const now = Date.now();
      if (dialect === 'sqlite') {
        await sql`with recursive n(i) as (select 1 union all select i + 1 from n where i < 50000)
          insert into jobs (id, kind, payload, state, run_at, attempts, max_attempts, group_key, created_at, updated_at)
          select 'job_big_' || i, 'test', '{}', 'pending', ${now} - 3600000 + i, 0, 5, 'acc_big', ${now}, ${now} from n`.execute(t.deps.db);
      } else {
        await sql`insert into jobs (id, kind, payload, state, run_at, attempts, max_attempts, group_key, created_at, updated_at)
          select 'job_big_' || i, 'test', '{}', 'pending', ${now}::bigint - 3600000 + i, 0, 5, 'acc_big', ${now}::bigint, ${now}::bigint from generate_series(1, 50000) i`.execute(t.deps.db);
        await sql`analyze jobs`.execute(t.deps.db);
      }
      await enqueueJobs(t.deps.db, [{ kind: 'test', payload: 'light', runAt: now - 1, groupKey: 'acc_light' }]);
      const due = dueJobs({ kinds: ['test'], limit: 10, now, dialect: dialectOf(t.deps.db), excludeGroups: ['acc_big'] });
      if (dialect === 'sqlite') {
        const plan = (await sql<{ detail: string }>`explain query plan ${due} select id from due`.execute(t.deps.db)).rows.map((r) => r.detail).join(' | ');
        assert.match(plan, /jobs_pending_group_run_at_idx \(kind=\? AND group_key[<>]\?\)/, plan);
      } else {
        const [plan] = (await sql<{ 'QUERY PLAN': unknown }>`explain (analyze, format json) ${due} select id from due`.execute(t.deps.db)).rows.map((r) => r['QUERY PLAN']);
        const text = JSON.stringify(plan);
        assert.match(text, /jobs_pending_group_run_at_idx/, text);
        const read = [...text.matchAll(/"Actual Rows":(\d+)/g)].reduce((max, m) => Math.max(max, Number(m[1])), 0);
        assert.ok(read <= 10, `the plan read ${read} rows somewhere: ${text}`);
      }
      const claimed = await claimDueJobs(t.deps.db, { workerId: 'w', kinds: ['test'], limit: 10, leaseMs: 60_000, now, excludeGroups: ['acc_big'] });
      assert.deepEqual(
        claimed.map((job) => job.payload),
        ['light'],
      );
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
