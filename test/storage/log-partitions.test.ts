// needs: database
// The delivery log's periods on PostgreSQL (src/storage/log-partitions.ts; docs/notifications.md,
// "Retention"): partitions made ahead, rows routed by id, whole periods dropped with their
// attempts once past the retention and with nothing pending, the rest deleted row by row.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { firstIdAt, newId } from '../../src/domain/ids.js';
import { deleteOldNotifications } from '../../src/services/notification-retention.js';
import { openStorage } from '../../src/storage/database.js';
import { dropExpiredLogPartitions, ensureLogPartitions, listLogPartitions, logPeriodMs, pendingCheck } from '../../src/storage/log-partitions.js';
import { claimDeliveries } from '../../src/storage/deliveries.js';
import { insertNotifications, newNotificationRow, recordAttempts } from '../../src/storage/repositories/notifications.js';
import type { NotificationStatus } from '../../src/domain/notifications/notification.js';
import { postgresUrlWithSchema, testDialects } from '../support/databases.js';
import { startTestDatabase, type TestDatabase } from '../support/test-database.js';

const MINUTE = 60_000;

describe('the period of a partition', () => {
  it('is a quarter of the retention, at least 15 s; 90 days when notifications are kept for ever', () => {
    assert.equal(logPeriodMs(90 * 86_400_000), 22.5 * 86_400_000);
    assert.equal(logPeriodMs(MINUTE), 15_000);
    assert.equal(logPeriodMs(0), 90 * 86_400_000);
  });
});

for (const dialect of testDialects()) {
  describe(`the delivery log's partitions [${dialect}]`, () => {
    let t: TestDatabase;
    before(async () => {
      t = await startTestDatabase(dialect);
    });
    after(() => t.close());

    if (dialect === 'sqlite') {
      it('SQLite has none: nothing is made or dropped, and retention deletes rows below its cut-off', async () => {
        assert.deepEqual(await ensureLogPartitions(t.deps.db, { now: Date.now(), periodMs: MINUTE }), []);
        assert.deepEqual(await listLogPartitions(t.deps.db), []);
        assert.deepEqual(await dropExpiredLogPartitions(t.deps.db, 'msg_x'), { dropped: [], busy: [], rowsBelow: 'msg_x' });
      });
      return;
    }

    // Periods of a minute, 60 days ahead of the real clock: clear of the partitions made at start
    // (the current period of NOTIFICATION_RETENTION's 90 days and the next: 45 days at most).
    const PERIOD = MINUTE;
    const base = (Math.floor(Date.now() / PERIOD) + 60 * 1440) * PERIOD;
    const at = (periods: number) => base + periods * PERIOD;

    /** A notification made at `time`, ended as `status` with one attempt (pending: none). */
    async function notification(time: number, status: NotificationStatus): Promise<string> {
      const lease = status === 'pending' ? null : 'w-test:partitions';
      const row = {
        ...newNotificationRow({ accountId: 'acc_p', requestId: newId('req', time), subscriptionId: null, event: 'registered-requests', url: 'https://example.com/hook', payload: '{}' }, time),
        lease,
      };
      await insertNotifications(t.deps.db, [row]);
      if (lease !== null) {
        const attempt = {
          notification_id: row.id,
          attempt: 1,
          started_at: time,
          url: row.url,
          status_code: 204,
          latency_ms: 3,
          response_body: null,
          error: null,
          outcome: status as 'succeeded' | 'failed',
          request_headers: null,
          retry_after: null,
        };
        await recordAttempts(t.deps.db, [{ attempt, lease, status, nextAttemptAt: null, now: time }]);
      }
      return row.id;
    }
    const partitionOf = async (table: string, column: string, id: string) =>
      (await sql<{ name: string }>`select tableoid::regclass::text as name from ${sql.table(table)} where ${sql.ref(column)} = ${id}`.execute(t.deps.db)).rows[0]?.name;
    const names = async () => (await listLogPartitions(t.deps.db)).map((p) => p.name);

    it('migration 017 leaves the notifications made before it in a partition of their own, and a default one; every process makes the current period at start', async () => {
      const partitions = await listLogPartitions(t.deps.db);
      assert.deepEqual({ ...partitions[0], to: undefined }, { name: 'notifications_legacy', from: null, to: undefined, isDefault: false });
      assert.deepEqual(partitions.at(-1), { name: 'notifications_default', from: null, to: null, isDefault: true });
      const current = partitions.find((p) => p.from !== null && p.from <= firstIdAt('msg', Date.now()) && (p.to === null || p.to > firstIdAt('msg', Date.now())));
      assert.ok(current, `a partition for now: ${JSON.stringify(partitions)}`);
      const id = await notification(Date.now(), 'succeeded');
      assert.equal(await partitionOf('notifications', 'id', id), current.name);
      assert.equal(await partitionOf('notification_attempts', 'notification_id', id), current.name.replace('notifications', 'notification_attempts'));
    });

    it('makes the periods from now to one period ahead, on the grid of the period, once; a lookup by id reads one partition', async () => {
      const made = await ensureLogPartitions(t.deps.db, { now: at(0) + 10_000, periodMs: PERIOD });
      assert.equal(made.length, 2, `this period and the next: ${made.join(', ')}`);
      assert.deepEqual(await ensureLogPartitions(t.deps.db, { now: at(0) + 20_000, periodMs: PERIOD }), [], 'already there');
      const partitions = await listLogPartitions(t.deps.db);
      const first = partitions.find((p) => p.name === made[0])!;
      assert.deepEqual({ from: first.from, to: first.to }, { from: firstIdAt('msg', at(0)), to: firstIdAt('msg', at(1)) });
      assert.match(made[0]!, /^notifications_p\d{8}t\d{6}$/);

      const id = await notification(at(0) + 30_000, 'succeeded');
      assert.equal(await partitionOf('notifications', 'id', id), made[0]);
      assert.equal(await partitionOf('notification_attempts', 'notification_id', id), made[0]!.replace('notifications', 'notification_attempts'));
      const plan = (await sql<{ 'QUERY PLAN': string }>`explain select * from notifications where id = ${id}`.execute(t.deps.db)).rows.map((row) => row['QUERY PLAN']).join('\n');
      assert.equal(plan.match(/ on notifications_\w+/g)?.length, 1, plan);
    });

    it("the look a drop makes under its locks reads the partition's due index, never its rows", async () => {
      const [partition] = await ensureLogPartitions(t.deps.db, { now: at(0) + 10_000, periodMs: PERIOD });
      const plan = await t.deps.db.transaction().execute(async (tx) => {
        await sql`set local enable_seqscan = off`.execute(tx);
        const { rows } = await sql<{ 'QUERY PLAN': string }>`explain ${pendingCheck(partition ?? (await listLogPartitions(tx))[0]!.name, 'due')}`.execute(tx);
        return rows.map((row) => row['QUERY PLAN']).join('\n');
      });
      assert.match(plan, /Index (Only )?Scan using \w*run_at\w*|Index (Only )?Scan using \w+due\w*/, plan);
      assert.doesNotMatch(plan, /Seq Scan/, plan);
    });

    it('two processes making them at once make each period once', async () => {
      const other = openStorage(postgresUrlWithSchema((await sql<{ s: string }>`select current_schema() as s`.execute(t.deps.db)).rows[0]!.s), { poolSize: 2 });
      try {
        const runs = await Promise.all([t.deps.db, other.db, t.deps.db].map((db) => ensureLogPartitions(db, { now: at(10) + 1_000, periodMs: PERIOD })));
        assert.equal(runs.flat().length, 2, JSON.stringify(runs));
        assert.equal(new Set(runs.flat()).size, 2);
      } finally {
        await other.close();
      }
    });

    it('a period whose notifications are already in the default partition is left to it; the next ones are made', async () => {
      const early = await notification(at(20) + 1_000, 'succeeded');
      assert.equal(await partitionOf('notifications', 'id', early), 'notifications_default', 'no partition for it yet');
      const made = await ensureLogPartitions(t.deps.db, { now: at(20) + 5_000, periodMs: PERIOD });
      assert.deepEqual(made.length, 1, `only the next period: ${made.join(', ')}`);
      const partitions = await listLogPartitions(t.deps.db);
      assert.equal(partitions.find((p) => p.name === made[0])!.from, firstIdAt('msg', at(21)));
      assert.equal(await partitionOf('notifications', 'id', early), 'notifications_default');
    });

    it('retention drops the wholly expired periods with their attempts, keeps one with a pending notification (deleting its ended rows) until nothing in it is pending, and leaves the period the cut-off falls in', async () => {
      await ensureLogPartitions(t.deps.db, { now: at(30), periodMs: PERIOD, aheadMs: 3 * PERIOD });
      const [p30, p31, p32] = (await listLogPartitions(t.deps.db)).filter((p) => p.from !== null && p.from >= firstIdAt('msg', at(30))).map((p) => p.name);
      const ended30 = [await notification(at(30) + 1_000, 'succeeded'), await notification(at(30) + 2_000, 'failed')];
      const ended31 = await notification(at(31) + 1_000, 'succeeded');
      const pending31 = await notification(at(31) + 2_000, 'pending');
      const straddling = await notification(at(32) + 1_000, 'succeeded');
      const present = await names();
      assert.ok(present.includes(p30!) && present.includes(p31!) && present.includes(p32!));

      // The cut-off in the middle of period 32: 30 and 31 are wholly past it.
      const retention = 10 * PERIOD;
      const now = at(32) + 30_000 + retention;
      const { deleted, dropped } = await deleteOldNotifications(t.deps.db, retention, now);
      assert.ok(dropped.includes(p30!), `period 30 dropped: ${dropped.join(', ')}`);
      assert.ok(!dropped.includes(p31!) && !dropped.includes(p32!));
      const left = await names();
      assert.ok(!left.includes(p30!));
      const attemptsTables = (
        await sql<{ name: string }>`select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid where i.inhparent = 'notification_attempts'::regclass`.execute(t.deps.db)
      ).rows.map((r) => r.name);
      assert.ok(!attemptsTables.includes(p30!.replace('notifications', 'notification_attempts')), 'its attempts partition went with it');
      for (const id of ended30) assert.equal(await partitionOf('notifications', 'id', id), undefined);
      assert.ok(deleted >= 1, 'the ended notification of period 31 went row by row');
      assert.equal(await partitionOf('notifications', 'id', ended31), undefined);
      assert.equal((await sql`select 1 from notification_attempts where notification_id = ${ended31}`.execute(t.deps.db)).rows.length, 0, 'with its attempt');
      assert.equal(await partitionOf('notifications', 'id', pending31), p31);
      assert.equal(await partitionOf('notifications', 'id', straddling), p32, 'the period the cut-off falls in waits to be wholly past');

      await sql`update notifications set status = 'failed', run_at = null where id = ${pending31}`.execute(t.deps.db);
      assert.ok((await deleteOldNotifications(t.deps.db, retention, now)).dropped.includes(p31!), 'dropped once nothing in it is pending');
    });

    it('a period detached but not dropped (its process stopped in between) is dropped by the next purge', async () => {
      await ensureLogPartitions(t.deps.db, { now: at(50) + 1_000, periodMs: PERIOD, aheadMs: 0 });
      const p50 = (await listLogPartitions(t.deps.db)).find((p) => p.from === firstIdAt('msg', at(50)))!.name;
      await sql`alter table notification_attempts detach partition ${sql.table(p50.replace('notifications', 'notification_attempts'))}`.execute(t.deps.db);
      await sql`alter table notifications detach partition ${sql.table(p50)}`.execute(t.deps.db);
      const tables = async () =>
        (
          await sql<{ name: string }>`select relname as name from pg_class where relnamespace = current_schema()::regnamespace and relname like ${`%${p50.slice('notifications'.length)}`}`.execute(
            t.deps.db,
          )
        ).rows.length;
      assert.equal(await tables(), 2);
      await dropExpiredLogPartitions(t.deps.db, firstIdAt('msg', at(0)));
      assert.equal(await tables(), 0);
    });

    it('a drop that cannot take its locks in time gives up without holding anyone up, and succeeds on the next tick', async () => {
      await ensureLogPartitions(t.deps.db, { now: at(40) + 1_000, periodMs: PERIOD, aheadMs: 0 });
      const p40 = (await listLogPartitions(t.deps.db)).find((p) => p.from === firstIdAt('msg', at(40)))!.name;
      await notification(at(40) + 1_000, 'succeeded');
      const cutoff = firstIdAt('msg', at(41));
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let reading!: () => void;
      const started = new Promise<void>((resolve) => (reading = resolve));
      const reader = t.deps.db.transaction().execute(async (tx) => {
        await sql`select count(*) from ${sql.table(p40)}`.execute(tx);
        reading();
        await held;
      });
      await started;
      try {
        const began = Date.now();
        const blocked = await dropExpiredLogPartitions(t.deps.db, cutoff);
        assert.deepEqual({ busy: blocked.busy, dropped: blocked.dropped.includes(p40) }, { busy: [p40], dropped: false });
        assert.ok(Date.now() - began < 5_000);
        assert.ok((await names()).includes(p40));
      } finally {
        release();
        await reader;
      }
      assert.deepEqual((await dropExpiredLogPartitions(t.deps.db, cutoff)).dropped.includes(p40), true);
    });
  });
}

if (testDialects().includes('postgres')) {
  describe('a claim of a full page of notifications [postgres]', () => {
    it('is a HOT update for every row, even of the shortest ones (no subscription, a registered-requests body), leased as the worker leases', async () => {
      const t = await startTestDatabase('postgres');
      try {
        const now = Date.now();
        const rows = Array.from({ length: 256 }, () => {
          const requestId = newId('req', now);
          const payload = JSON.stringify({ id: requestId, rewardValue: 10 });
          return newNotificationRow({ accountId: newId('acc', now), requestId, subscriptionId: null, event: 'registered-requests', url: 'https://example.com/hook', payload }, now);
        });
        await insertNotifications(t.deps.db, rows);
        // The updates of this transaction so far, over every partition (PostgreSQL counts them per partition).
        const counts = await t.deps.db.transaction().execute(async (tx) => {
          const claimed = await claimDeliveries(tx, { workerId: `w-${randomBytes(6).toString('hex')}`, limit: 256, leaseMs: 60_000, now });
          const {
            rows: [updates],
          } = await sql<{ all: string; hot: string }>`select sum(pg_stat_get_xact_tuples_updated(i.inhrelid))::text as all,
              sum(pg_stat_get_xact_tuples_hot_updated(i.inhrelid))::text as hot from pg_inherits i where i.inhparent = 'notifications'::regclass`.execute(tx);
          return { claimed: claimed.length, updated: Number(updates!.all), hot: Number(updates!.hot) };
        });
        assert.deepEqual(counts, { claimed: 256, updated: 256, hot: 256 });
      } finally {
        await t.close();
      }
    });
  });
}
