// needs: database
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { openStorage, type Storage } from '../../src/storage/database.js';
import { claimDueJobs, enqueueJobs, JobSignals, JOBS_CHANNEL, notifyOtherProcesses, type NewJob } from '../../src/storage/queue/index.js';
import type { Executor } from '../../src/storage/database.js';
import { applyHandOff, DELIVERIES, settleDeliveries, type Delivery } from '../../src/storage/deliveries.js';
import { insertNotifications, newNotificationRow } from '../../src/storage/repositories/notifications.js';
import type { NotificationsTable } from '../../src/storage/tables/index.js';
import type { Deliverer } from '../../src/worker/delivery-loop.js';

const enqueueJob = (db: Executor, job: NewJob) => enqueueJobs(db, [job]);
import type { JobHandlers } from '../../src/worker/job-handlers.js';
import { startJobWorker, type JobWorkerOptions } from '../../src/worker/job-worker.js';

/** A notification of `accountId` due now, named `msg_<name>`. */
const notificationRow = (name: string, accountId = 'acc_worker', now = Date.now()): NotificationsTable => ({
  ...newNotificationRow({ accountId, requestId: `req_${name}`, subscriptionId: null, event: 'registered-requests', url: 'https://example.com/hook', payload: '{}' }, now),
  id: `msg_${name}`,
});
/** Settles a delivery as succeeded under its lease; true when it still held it. */
const succeed = async (db: Executor, delivery: Delivery) =>
  (
    await settleDeliveries(db, [{ id: delivery.id, lease: delivery.lease, status: 'succeeded', attemptCount: 1, lastStatusCode: 200, lastError: null, nextAttemptAt: null, now: Date.now() }])
  ).settled.has(delivery.id);
import { Liveness } from '../../src/liveness.js';
import { testDialects } from '../support/databases.js';
import { insertExperience, prizeStock } from '../support/experiences.js';
import { eventually } from '../support/notifications.js';
import { gate } from '../support/receivers.js';
import { startTestDatabase, type TestDatabase } from '../support/test-database.js';

for (const dialect of testDialects()) {
  describe(`job worker [${dialect}]`, () => {
    let t: TestDatabase;
    let experienceId: string;
    const HOUR = 3_600_000;
    const worker = (handlers: JobHandlers, options: Partial<JobWorkerOptions> = {}) =>
      startJobWorker({ db: t.deps.db, log: t.deps.log, clock: Date.now, signals: t.deps.signals, pool: t.deps.storage.pool }, { handlers, deliverer: null, leaseMs: 60_000, ...options });
    // Observable effect of a job: one unit of a prize's stock.
    const takeUnit: JobHandlers = {
      take: {
        async handle(tx, jobs) {
          for (const job of jobs) {
            if (job.payload === 'poison') throw new Error('poisoned job');
            await tx
              .updateTable('prizes')
              .set((eb) => ({ stock: eb('stock', '-', 1) }))
              .where('experience_id', '=', experienceId)
              .execute();
          }
        },
        async onExhausted(tx) {
          await tx.updateTable('prizes').set({ stock: -1000 }).where('experience_id', '=', experienceId).execute();
        },
      },
    };
    const stock = () => prizeStock(t.deps.db, experienceId, 'p');

    before(async () => {
      t = await startTestDatabase(dialect);
      const account = await t.createClientAccount();
      experienceId = (await insertExperience(t.deps.db, account.accountId, { prizes: [{ id: 'p', stock: 1000 }] })).id;
    });
    beforeEach(async () => {
      await t.deps.db.deleteFrom('jobs').execute();
      await t.deps.db.deleteFrom('notifications').execute();
      await t.deps.db.updateTable('prizes').set({ stock: 1000 }).execute();
    });
    after(() => t.close());

    it('a batch with one poisoned job still completes the others; the poisoned one is retried, then exhausted', async () => {
      await enqueueJobs(t.deps.db, [
        { kind: 'take', payload: 1 },
        { kind: 'take', payload: 'poison', maxAttempts: 2 },
        { kind: 'take', payload: 3 },
      ]);
      const w = worker(takeUnit, { autoStart: false });
      await w.runUntilIdle();
      assert.equal(await stock(), 998, 'the two good jobs took one unit each, once');
      const [poisoned] = await t.deps.db.selectFrom('jobs').selectAll().execute();
      assert.deepEqual([poisoned!.attempts, poisoned!.state, poisoned!.last_error], [1, 'pending', 'poisoned job']);
      await t.deps.db.updateTable('jobs').set({ run_at: 0 }).execute();
      await w.runUntilIdle();
      assert.equal((await t.deps.db.selectFrom('jobs').select('state').executeTakeFirstOrThrow()).state, 'failed');
      assert.equal(await stock(), -1000, 'onExhausted ran in the transaction that failed the job');
      await w.stop();
    });

    it('a job abandoned by a dead worker is taken over once its lease ends, and done once', async () => {
      await enqueueJob(t.deps.db, { kind: 'take', payload: 1 });
      const abandoned = await claimDueJobs(t.deps.db, { workerId: 'dead', kinds: ['take'], limit: 10, leaseMs: 200 });
      assert.equal(abandoned.length, 1);
      const w = worker(takeUnit, { autoStart: false });
      assert.equal(await w.runUntilIdle(), 0, 'the lease still protects it');
      await sleep(250);
      assert.equal(await w.runUntilIdle(), 1);
      assert.equal(await stock(), 999);
      await w.stop();
    });

    it('a loop stuck in one step (a handler that never returns) is seen by liveness, naming the loop', async () => {
      const stuck = gate();
      const liveness = new Liveness(300);
      const handlers: JobHandlers = {
        take: {
          async handle() {
            await stuck.wait;
          },
        },
      };
      const w = startJobWorker(
        { db: t.deps.db, log: t.deps.log, clock: Date.now, signals: t.deps.signals, pool: t.deps.storage.pool, liveness },
        { handlers, deliverer: null, leaseMs: 60_000, pollIntervalMs: 50, transactionalLoops: 1 },
      );
      assert.deepEqual(liveness.check(), { live: true });
      await enqueueJob(t.deps.db, { kind: 'take', payload: 1 });
      t.deps.signals.enqueued();
      const state = await eventually(
        () => {
          const checked = liveness.check();
          return !checked.live && checked;
        },
        10_000,
        'liveness to see the stuck step',
      );
      assert.match(state.reason, /the transactional \(1\) loop has been at one step for \d+ s, past LIVENESS_TIMEOUT/);
      stuck.open();
      await eventually(() => liveness.check().live, 10_000, 'liveness again once the step ends');
      await w.stop();
    });

    it('wakes up in-process as soon as jobs are enqueued (polling set to an hour)', async () => {
      const w = worker(takeUnit, { pollIntervalMs: HOUR });
      await sleep(50); // let the loop reach its idle wait
      await enqueueJob(t.deps.db, { kind: 'take', payload: 1 });
      t.deps.signals.enqueued();
      await eventually(async () => ((await stock()) === 999 ? true : undefined), 60_000, 'the woken worker');
      await w.stop();
    });

    it('deliveries run outside transactions and settle under their lease; a run that throws is due again later; stop() waits for the runs in flight', async () => {
      const slow = gate();
      const seen: string[] = [];
      const deliverer: Deliverer = {
        async deliver(delivery, callOver) {
          seen.push(delivery.id);
          if (delivery.id === 'msg_slow') await slow.wait;
          if (delivery.id === 'msg_fails') throw new Error('the attempt could not be made');
          callOver();
          return succeed(t.deps.db, delivery);
        },
        runFailed: async (delivery) =>
          void (await t.deps.db
            .updateTable('notifications')
            .set({ run_at: Date.now() + HOUR, lease: null, lease_until: null })
            .where('id', '=', delivery.id)
            .where('lease', '=', delivery.lease)
            .execute()),
      };
      await insertNotifications(t.deps.db, [notificationRow('ok'), notificationRow('fails'), notificationRow('slow')]);
      t.deps.signals.enqueued([DELIVERIES]);
      const w = worker({}, { deliverer, pollIntervalMs: HOUR });
      await eventually(async () => (seen.length === 3 ? true : undefined), 60_000, 'all three to start');
      let stopped = false;
      const stopping = w.stop().then(() => (stopped = true));
      await sleep(50);
      assert.equal(stopped, false, 'stop waits for the delivery in flight');
      slow.open();
      await stopping;
      const rows = await t.deps.db.selectFrom('notifications').select(['id', 'status', 'run_at', 'lease']).orderBy('id').execute();
      assert.deepEqual(
        rows.map((row) => [row.id, row.status, row.run_at === null ? null : Number(row.run_at) > Date.now() ? 'later' : 'now', row.lease]),
        [
          ['msg_fails', 'pending', 'later', null],
          ['msg_ok', 'succeeded', null, null],
          ['msg_slow', 'succeeded', null, null],
        ],
      );
    });

    it('the deliveries a batch writes start after its commit, leased in its transaction (no claim), as far as the loop has room', async () => {
      const leases: Array<[id: string, lease: string, ownLease: boolean]> = [];
      const handlers: JobHandlers = {
        take: {
          async handle(tx, jobs, _ctx, batch) {
            const now = Date.now();
            await insertNotifications(
              tx,
              applyHandOff(
                jobs.map((job) => notificationRow(String(job.payload), 'acc_worker', now)),
                batch.handOff,
                now,
              ),
            );
          },
        },
      };
      const deliverer: Deliverer = {
        async deliver(delivery, callOver) {
          const row = await t.deps.db.selectFrom('notifications').select('lease').where('id', '=', delivery.id).executeTakeFirstOrThrow();
          leases.push([delivery.id, delivery.lease, row.lease === delivery.lease]);
          callOver();
          return succeed(t.deps.db, delivery);
        },
        runFailed: async () => assert.fail('no run fails'),
      };
      await enqueueJobs(
        t.deps.db,
        [1, 2, 3].map((n) => ({ kind: 'take', payload: n })),
      );
      // A capacity of 4: an account alone holds at most 2.
      const w = worker(handlers, { deliverer, autoStart: false, deliveryCapacity: 4 });
      await w.runUntilIdle();
      leases.sort((a, b) => (a[0] < b[0] ? -1 : 1));
      const handedOff = leases[0]![1];
      assert.deepEqual(
        leases.map(([id, lease, ownLease]) => [id, lease === handedOff ? 'handed off' : 'claimed', ownLease]),
        [
          ['msg_1', 'handed off', true],
          ['msg_2', 'handed off', true],
          ['msg_3', 'claimed', true], // room for two: the third waited for a claim
        ],
      );
      const statuses = await t.deps.db.selectFrom('notifications').select('status').execute();
      assert.deepEqual(
        statuses.map((row) => row.status),
        ['succeeded', 'succeeded', 'succeeded'],
        'every delivery settled once',
      );
      await w.stop();
    });

    it('runs two transactional batches at once on PostgreSQL (one on SQLite), each job exactly once', async () => {
      let active = 0;
      let most = 0;
      const done: unknown[] = [];
      const handlers: JobHandlers = {
        take: {
          async handle(tx, jobs) {
            active += 1;
            most = Math.max(most, active);
            await tx
              .updateTable('prizes')
              .set((eb) => ({ stock: eb('stock', '-', jobs.length) }))
              .where('experience_id', '=', experienceId)
              .execute();
            await sleep(30); // a batch's round trips
            done.push(...jobs.map((job) => job.payload));
            active -= 1;
          },
        },
      };
      await enqueueJobs(
        t.deps.db,
        Array.from({ length: 200 }, (_, i) => ({ kind: 'take', payload: i })),
      );
      const w = worker(handlers, { pollIntervalMs: HOUR, batchSize: 20, gatherMs: 0 });
      t.deps.signals.enqueued();
      await eventually(async () => (done.length >= 200 ? true : undefined), 60_000, 'every job');
      await w.stop();
      assert.equal(new Set(done).size, 200);
      assert.equal(done.length, 200, 'no job ran twice');
      assert.equal(await stock(), 800);
      assert.equal(most, dialect === 'postgres' ? 2 : 1);
    });

    it('takes up to 512 transactional jobs per batch on PostgreSQL, 256 on SQLite, unless told', async () => {
      const sizes: number[] = [];
      const handlers: JobHandlers = { take: { handle: async (_tx, jobs) => void sizes.push(jobs.length) } };
      await enqueueJobs(
        t.deps.db,
        Array.from({ length: 600 }, (_, i) => ({ kind: 'take', payload: i })),
      );
      await worker(handlers, { autoStart: false }).runUntilIdle();
      assert.deepEqual(sizes, dialect === 'postgres' ? [512, 88] : [256, 256, 88]);
    });

    it('a delivery whose call is over frees its room while its outcome is still being recorded', async () => {
      const bookkeeping = gate();
      let started = 0;
      let finished = 0;
      const deliverer: Deliverer = {
        async deliver(delivery, callOver) {
          started += 1;
          callOver();
          await bookkeeping.wait; // the outcome's commit, still to come
          finished += 1;
          return succeed(t.deps.db, delivery);
        },
        runFailed: async () => assert.fail('no run fails'),
      };
      await insertNotifications(
        t.deps.db,
        Array.from({ length: 10 }, (_, i) => notificationRow(String(i))),
      );
      t.deps.signals.enqueued([DELIVERIES]);
      const w = worker({}, { deliverer, pollIntervalMs: HOUR, deliveryCapacity: 2 });
      // Room for two calls, but deliveries past their call do not hold it: more start, up to 2 × the capacity in flight.
      await eventually(async () => (started === 4 ? true : undefined), 60_000, 'four deliveries to start with room for two');
      await sleep(100);
      assert.equal(started, 4, 'deliveries still recording their outcome are bounded too');
      assert.equal(finished, 0);
      bookkeeping.open();
      await eventually(async () => (finished === 10 ? true : undefined), 60_000, 'every delivery to finish');
      await w.stop();
      const pending = await t.deps.db.selectFrom('notifications').select('id').where('status', '=', 'pending').execute();
      assert.deepEqual(pending, []);
    });
  });
}

for (const dialect of testDialects().filter((d) => d === 'postgres')) {
  describe('job worker across processes [postgres]', () => {
    let t: TestDatabase;
    let other: Storage;
    let experienceId: string;
    before(async () => {
      t = await startTestDatabase(dialect);
      const schema = (await sql<{ s: string }>`select current_schema() as s`.execute(t.deps.db)).rows[0]!.s;
      other = openStorage(t.config.databaseUrl, { schema });
      const account = await t.createClientAccount();
      experienceId = (await insertExperience(t.deps.db, account.accountId, { prizes: [{ id: 'p', stock: 10 }] })).id;
    });
    after(async () => {
      await other.close();
      await t.close();
    });
    const handlers = (held?: Promise<void>): JobHandlers => ({
      take: {
        async handle(tx) {
          await tx
            .updateTable('prizes')
            .set((eb) => ({ stock: eb('stock', '-', 1) }))
            .where('experience_id', '=', experienceId)
            .execute();
          await held;
        },
      },
    });
    const start = (storage: Storage, h: JobHandlers, options: Partial<JobWorkerOptions> = {}) =>
      startJobWorker({ db: storage.db, log: t.deps.log, clock: Date.now, signals: new JobSignals(), pool: storage.pool }, { handlers: h, deliverer: null, leaseMs: 60_000, ...options });

    it('LISTEN/NOTIFY wakes a worker of another process (polling set to an hour)', async () => {
      const w = start(t.deps.storage, handlers(), { pollIntervalMs: 3_600_000 });
      await sleep(300); // LISTEN is established
      // Another pool, as another process would: no in-process signal, only the NOTIFY on commit.
      await other.db.transaction().execute(async (tx) => {
        await enqueueJob(tx, { kind: 'take', payload: 1 });
        await notifyOtherProcesses(tx, ['take']);
      });
      await eventually(async () => ((await prizeStock(t.deps.db, experienceId, 'p')) === 9 ? true : undefined), 60_000, 'the NOTIFY wake-up');
      // A NOTIFY with no kinds (what older processes send, during a rolling upgrade) wakes every loop.
      await other.db.transaction().execute(async (tx) => {
        await enqueueJob(tx, { kind: 'take', payload: 1 });
        await sql`select pg_notify(${JOBS_CHANNEL}, '')`.execute(tx);
      });
      await eventually(async () => ((await prizeStock(t.deps.db, experienceId, 'p')) === 8 ? true : undefined), 60_000, 'the wake-up without kinds');
      await w.stop();
    });

    it('a NOTIFY naming only deliveries wakes the delivery loop and leaves the transactional loops asleep', async () => {
      let calls = 0;
      const deliverer: Deliverer = {
        async deliver(delivery, callOver) {
          calls += 1;
          callOver();
          return succeed(t.deps.db, delivery);
        },
        runFailed: async () => assert.fail('no run fails'),
      };
      const w = start(t.deps.storage, handlers(), { deliverer, pollIntervalMs: 3_600_000 });
      try {
        await sleep(300); // LISTEN is established and both loops found nothing
        const stock = await prizeStock(t.deps.db, experienceId, 'p');
        await other.db.transaction().execute(async (tx) => {
          await enqueueJobs(tx, [{ kind: 'take', payload: 1 }]);
          await insertNotifications(tx, [notificationRow('notified')]);
          await notifyOtherProcesses(tx, [DELIVERIES]);
        });
        await eventually(async () => (calls === 1 ? true : undefined), 60_000, 'the delivery loop to wake');
        await sleep(300);
        assert.equal(await prizeStock(t.deps.db, experienceId, 'p'), stock, 'the due transactional job waits: its loops were not woken');
        await other.db.transaction().execute((tx) => notifyOtherProcesses(tx, ['take']));
        await eventually(async () => ((await prizeStock(t.deps.db, experienceId, 'p')) === stock! - 1 ? true : undefined), 60_000, 'the transactional loops to wake');
      } finally {
        await w.stop();
      }
    });

    it('a worker whose lease expired mid-transaction keeps its row lock: nobody steals the job, it takes effect once', async () => {
      const held = gate();
      const stock = (await prizeStock(t.deps.db, experienceId, 'p'))!;
      await enqueueJob(t.deps.db, { kind: 'take', payload: 1 });
      const slow = start(t.deps.storage, handlers(held.wait), { autoStart: false, leaseMs: 100 });
      const slowRun = slow.runUntilIdle();
      await sleep(300); // the slow worker holds its row lock, its lease has expired
      const fast = start(other, handlers(), { autoStart: false });
      assert.equal(await fast.runUntilIdle(), 0, 'a row locked by a live transaction is skipped, not stolen');
      held.open();
      await slowRun;
      assert.equal(await prizeStock(t.deps.db, experienceId, 'p'), stock - 1, 'done exactly once');
      await slow.stop();
      await fast.stop();
    });
  });
}
