// needs: database, every-node-line
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { sql } from 'kysely';
import { openStorage, type Storage } from '../../src/storage/database.js';
import { newId } from '../../src/domain/ids.js';
import { DatabaseAheadError, finishPartitionedIndexes, migrateTo, migrateToLatest } from '../../src/storage/migrations/index.js';
import { claimDeliveries } from '../../src/storage/deliveries.js';
import { createPostgresSchema, postgresUrl, testDialects } from '../support/databases.js';

for (const dialect of testDialects()) {
  describe(`schema upgrades in place [${dialect}]`, () => {
    const cleanups: Array<() => Promise<void>> = [];
    after(async () => {
      for (const cleanup of cleanups) await cleanup();
    });
    async function olderDatabase(): Promise<Storage> {
      if (dialect === 'sqlite') return openStorage(`sqlite:${join(mkdtempSync(join(tmpdir(), 'rewards-migrate-')), 'rewards.db')}`);
      const schema = await createPostgresSchema();
      cleanups.push(() => schema.drop());
      return openStorage(postgresUrl(), { schema: schema.schema, poolSize: 2 });
    }

    it("007: a notification's schedule moves to its delivery job; 008: it is not a test send; … 016: the delivery jobs move back into the rows; existing rows and jobs are kept", async () => {
      const storage = await olderDatabase();
      cleanups.unshift(() => storage.close());
      await migrateTo(storage.db, '006_jobs_kind_index');
      await sql`insert into notifications (id, account_id, request_id, subscription_id, event, url, payload, status, attempt_count, next_attempt_at, created_at, updated_at)
                values ('msg_old', 'acc_1', 'req_1', null, 'registered-requests', 'https://example.com/hook', '{}', 'pending', 1, 5000, 1000, 1000)`.execute(storage.db);
      await sql`insert into jobs (id, kind, payload, state, run_at, attempts, max_attempts, dedupe_key, created_at, updated_at)
                values ('job_old', 'deliver-notification', '{"notificationId":"msg_old"}', 'pending', 5000, 1, 20, 'deliver:msg_old', 1000, 1000)`.execute(storage.db);
      assert.deepEqual((await migrateTo(storage.db, '007_notifications_schedule_in_jobs')).applied, ['007_notifications_schedule_in_jobs']);
      const row = (await sql<Record<string, unknown>>`select * from notifications`.execute(storage.db)).rows[0]!;
      assert.equal(row.id, 'msg_old');
      assert.equal('next_attempt_at' in row, false, 'the column is gone');
      assert.equal(Number(row.attempt_count), 1);
      assert.equal((await sql`select id from jobs`.execute(storage.db)).rows.length, 1);

      // 008: existing notifications are not test sends.
      assert.deepEqual((await migrateTo(storage.db, '008_notifications_test_flag')).applied, ['008_notifications_test_flag']);
      const upgraded = (await sql<Record<string, unknown>>`select * from notifications`.execute(storage.db)).rows[0]!;
      assert.equal(Number(upgraded.test), 0);

      // 009: the pending notification is found by the subscription-pending index's predicate; no subscription is disabled or limited.
      await sql`insert into accounts (id, name, is_operator, active, created_at) values ('acc_1', 'a', 0, 1, 1000)`.execute(storage.db);
      await sql`insert into subscriptions (id, account_id, event, description, active, experiences, callback_url, callback_authorization_encrypted, callback_custom_headers, created_at, updated_at)
                values ('sub_old', 'acc_1', 'registered-request', '', 1, '[]', 'https://example.com/hook', null, '{}', 1000, 1000)`.execute(storage.db);
      assert.deepEqual((await migrateTo(storage.db, '012_notification_waiters')).applied, ['009_delivery_operations', '010_console_links', '011_notification_order', '012_notification_waiters']);
      const sub = (await sql<Record<string, unknown>>`select disabled_reason, disabled_at, rate_limit from subscriptions`.execute(storage.db)).rows[0]!;
      assert.deepEqual({ ...sub }, { disabled_reason: null, disabled_at: null, rate_limit: null });
      // 011, 012: the existing notification waits for nothing, and nothing waits for it.
      const order = (await sql<Record<string, unknown>>`select waits_for, has_waiters from notifications`.execute(storage.db)).rows[0]!;
      assert.deepEqual({ waits_for: order.waits_for, has_waiters: Number(order.has_waiters) }, { waits_for: null, has_waiters: 0 });

      // 013: a pending delivery job gets its notification's account (fair claims); other jobs none.
      await sql`insert into jobs (id, kind, payload, state, run_at, attempts, max_attempts, created_at, updated_at)
                values ('job_register', 'register-request', '{"requestId":"req_1"}', 'pending', 5000, 0, 10, 1000, 1000)`.execute(storage.db);
      assert.deepEqual((await migrateTo(storage.db, '013_delivery_fairness')).applied, ['013_delivery_fairness']);
      const groups = (await sql<{ id: string; group_key: string | null }>`select id, group_key from jobs order by id`.execute(storage.db)).rows;
      assert.deepEqual(
        groups.map((row) => ({ ...row })),
        [
          { id: 'job_old', group_key: 'acc_1' },
          { id: 'job_register', group_key: null },
        ],
      );

      // 014: an account and a client inactive before the upgrade have their tokens refused after it.
      await sql`insert into accounts (id, name, is_operator, active, created_at) values ('acc_off', 'off', 0, 0, 1000)`.execute(storage.db);
      await sql`insert into oauth_clients (client_id, account_id, scopes, secret_hash, active, created_at, updated_at)
                values ('cli_off', 'acc_1', 'events:read', 'x', 0, 1000, 1000), ('cli_on', 'acc_1', 'events:read', 'y', 1, 1000, 1000)`.execute(storage.db);
      assert.deepEqual((await migrateTo(storage.db, '015_readiness_probe')).applied, ['014_token_revocations', '015_readiness_probe']);
      const revocations = (await sql<Record<string, unknown>>`select kind, subject_id, refused, issued_before, expires_at from token_revocations order by kind`.execute(storage.db)).rows;
      assert.deepEqual(
        revocations.map((row) => ({ ...row })),
        [
          { kind: 'account', subject_id: 'acc_off', refused: 'deactivated', issued_before: null, expires_at: null },
          { kind: 'client', subject_id: 'cli_off', refused: 'deactivated', issued_before: null, expires_at: null },
        ],
      );

      // 016: the delivery jobs move into their notification rows. A live database: a delivery due
      // later after two runs, one waiting for its rate-limit turn, one leased to a worker, one held
      // behind another (no job), one ended with its dead job; a registration job stays a job.
      const notification = (id: string, status: string, waitsFor: string | null = null) =>
        sql`insert into notifications (id, account_id, request_id, subscription_id, event, url, payload, status, attempt_count, created_at, updated_at, test, waits_for, has_waiters)
            values (${id}, 'acc_1', 'req_1', 'sub_old', 'registered-requests', 'https://example.com/hook', '{}', ${status}, 0, 1000, 1000, 0, ${waitsFor}, 0)`.execute(storage.db);
      const job = (id: string, notificationId: string, state: string, runAt: number, attempts: number, lastError: string | null = null, lockedBy: string | null = null) =>
        sql`insert into jobs (id, kind, payload, state, run_at, attempts, max_attempts, dedupe_key, group_key, last_error, locked_by, created_at, updated_at)
            values (${id}, 'deliver-notification', ${JSON.stringify({ notificationId })}, ${state}, ${runAt}, ${attempts}, 20, ${`deliver:${notificationId}`}, 'acc_1', ${lastError}, ${lockedBy}, 1000, 1000)`.execute(
          storage.db,
        );
      await notification('msg_limited', 'pending');
      await notification('msg_leased', 'pending');
      await notification('msg_held', 'pending', 'msg_old');
      await notification('msg_dead', 'failed');
      await job('job_limited', 'msg_limited', 'pending', 7000, 0, 'waiting for its turn under the subscription rateLimit');
      await job('job_leased', 'msg_leased', 'pending', 8000, 1, null, 'w-gone:abc');
      await job('job_dead', 'msg_dead', 'failed', 3000, 20, 'database unreachable');
      await sql`update jobs set run_at = 6000, attempts = 2 where id = 'job_old'`.execute(storage.db);
      assert.deepEqual((await migrateTo(storage.db, '016_deliveries_in_notification_rows')).applied, ['016_deliveries_in_notification_rows']);
      const rows = (await sql<Record<string, unknown>>`select id, status, run_at, runs, postponed, lease, lease_until from notifications order by id`.execute(storage.db)).rows;
      assert.deepEqual(
        rows.map((row) => ({ ...row, run_at: row.run_at === null ? null : Number(row.run_at), lease_until: row.lease_until === null ? null : Number(row.lease_until) })),
        [
          { id: 'msg_dead', status: 'failed', run_at: null, runs: 0, postponed: 0, lease: null, lease_until: null },
          { id: 'msg_held', status: 'pending', run_at: null, runs: 0, postponed: 0, lease: null, lease_until: null },
          { id: 'msg_leased', status: 'pending', run_at: 8000, runs: 1, postponed: 0, lease: null, lease_until: null },
          { id: 'msg_limited', status: 'pending', run_at: 7000, runs: 0, postponed: 1, lease: null, lease_until: null },
          { id: 'msg_old', status: 'pending', run_at: 6000, runs: 2, postponed: 0, lease: null, lease_until: null },
        ],
      );
      assert.deepEqual(
        (await sql<{ id: string }>`select id from jobs order by id`.execute(storage.db)).rows.map((row) => row.id),
        ['job_register'],
        'only the registration job is left',
      );

      // 017: on PostgreSQL the delivery log becomes partitioned by period; the rows stay where
      // they are (the old table is the partition of every id made before), those whose id is not
      // a time go to the default partition; a due delivery is claimed as before; SQLite is unchanged.
      const timed = newId('msg', Date.UTC(2026, 0, 1));
      await notification(timed, 'succeeded');
      const attempt = (id: string, n: number) =>
        sql`insert into notification_attempts (notification_id, attempt, started_at, url, status_code, latency_ms, outcome) values (${id}, ${n}, 1000, 'https://example.com/hook', 200, 5, 'succeeded')`.execute(
          storage.db,
        );
      await attempt(timed, 1);
      await attempt('msg_old', 1);
      const everything = async () => ({
        notifications: (await sql<Record<string, unknown>>`select * from notifications order by id`.execute(storage.db)).rows,
        attempts: (await sql<Record<string, unknown>>`select * from notification_attempts order by notification_id, attempt`.execute(storage.db)).rows,
      });
      const before017 = await everything();
      assert.deepEqual((await migrateTo(storage.db, '017_partitioned_delivery_log')).applied, ['017_partitioned_delivery_log']);
      assert.deepEqual(await everything(), before017, 'every row kept, unchanged');
      const claimed = await claimDeliveries(storage.db, { workerId: 'w', limit: 10, leaseMs: 60_000, now: 7500 });
      assert.deepEqual(
        claimed.map((delivery) => delivery.id),
        ['msg_limited', 'msg_old'],
      );
      if (dialect === 'postgres') {
        const where = async (table: string) =>
          (
            await sql<{
              id: string;
              partition: string;
            }>`select ${sql.ref(table === 'notifications' ? 'id' : 'notification_id')} as id, tableoid::regclass::text as partition from ${sql.table(table)} order by 1`.execute(storage.db)
          ).rows.map((row) => `${row.id} ${row.partition}`);
        assert.deepEqual(await where('notifications'), [
          `${timed} notifications_legacy`,
          ...['msg_dead', 'msg_held', 'msg_leased', 'msg_limited', 'msg_old'].map((id) => `${id} notifications_default`),
        ]);
        assert.deepEqual(await where('notification_attempts'), [`${timed} notification_attempts_legacy`, 'msg_old notification_attempts_default']);
        const indexes = (
          await sql<{ name: string }>`select indexname as name from pg_indexes where tablename = 'notifications' and schemaname = current_schema() order by 1`.execute(storage.db)
        ).rows.map((row) => row.name);
        assert.deepEqual(indexes, [
          'notifications_account_idx',
          'notifications_due_account_idx',
          'notifications_due_idx',
          'notifications_pkey',
          'notifications_request_idx',
          'notifications_subscription_failed_idx',
          'notifications_subscription_pending_idx',
          'notifications_test_sends_idx',
          'notifications_waits_for_idx',
        ]);
        await assert.rejects(notification(timed, 'pending'), /duplicate key/, 'the primary key holds across partitions');
        const fillfactors = async () =>
          (
            await sql<{ name: string; options: string[] | null }>`select c.relname as name, c.reloptions as options from pg_inherits i join pg_class c on c.oid = i.inhrelid
              where i.inhparent = 'notifications'::regclass order by 1`.execute(storage.db)
          ).rows.map((row) => `${row.name} ${row.options?.join(',')}`);
        assert.deepEqual(await fillfactors(), ['notifications_default fillfactor=50', 'notifications_legacy fillfactor=50']);
        assert.deepEqual((await migrateTo(storage.db, '018_delivery_log_fillfactor')).applied, ['018_delivery_log_fillfactor']);
        assert.deepEqual(await fillfactors(), ['notifications_default fillfactor=40', 'notifications_legacy fillfactor=40'], '018: every partition');
        // And back: plain tables with the same rows and the attempts' foreign key.
        const before = await everything();
        await migrateTo(storage.db, '016_deliveries_in_notification_rows');
        assert.deepEqual(await everything(), before);
        const kinds = (await sql<{ relkind: string }>`select relkind from pg_class where relname = 'notifications' and relnamespace = current_schema()::regnamespace`.execute(storage.db)).rows;
        assert.deepEqual(
          kinds.map((row) => row.relkind),
          ['r'],
        );
        await assert.rejects(attempt('msg_nowhere', 1), /foreign key/);
      }
    });

    it('019, 020: attempts logged before have no recorded headers, notifications no manual retry; every partition gets the columns; and back', async () => {
      const storage = await olderDatabase();
      cleanups.unshift(() => storage.close());
      await migrateTo(storage.db, '018_delivery_log_fillfactor');
      const id = newId('msg', Date.now());
      await sql`insert into notifications (id, account_id, request_id, subscription_id, event, url, payload, status, attempt_count, created_at, updated_at, test, waits_for, has_waiters, run_at)
                values (${id}, 'acc_1', 'req_1', null, 'registered-requests', 'https://example.com/hook', '{}', 'pending', 1, 1000, 1000, 0, null, 0, 5000)`.execute(storage.db);
      await sql`insert into notification_attempts (notification_id, attempt, started_at, url, status_code, latency_ms, outcome) values (${id}, 1, 1000, 'https://example.com/hook', 500, 5, 'retry')`.execute(
        storage.db,
      );
      assert.deepEqual((await migrateTo(storage.db, '020_manual_retry')).applied, ['019_attempt_request_headers', '020_manual_retry']);
      const attempt = (await sql<Record<string, unknown>>`select request_headers from notification_attempts`.execute(storage.db)).rows[0]!;
      assert.deepEqual({ ...attempt }, { request_headers: null });
      const notification = (await sql<Record<string, unknown>>`select manual_attempts, manual_resume_at, run_at from notifications`.execute(storage.db)).rows[0]!;
      assert.deepEqual({ ...notification, run_at: Number(notification.run_at) }, { manual_attempts: null, manual_resume_at: null, run_at: 5000 });
      const columnsOf = async (table: string) => (await storage.db.introspection.getTables()).find((t) => t.name === table)?.columns.map((c) => c.name) ?? [];
      if (dialect === 'postgres') {
        const partitions = (
          await sql<{ name: string }>`select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
            where i.inhparent in ('notifications'::regclass, 'notification_attempts'::regclass) order by 1`.execute(storage.db)
        ).rows.map((row) => row.name);
        assert.ok(partitions.length >= 2);
        for (const partition of partitions) {
          const wanted = partition.startsWith('notification_attempts') ? ['request_headers'] : ['manual_attempts', 'manual_resume_at'];
          for (const column of wanted) assert.ok((await columnsOf(partition)).includes(column), `${partition}.${column}`);
        }
      }
      await migrateTo(storage.db, '018_delivery_log_fillfactor');
      assert.ok(!(await columnsOf('notification_attempts')).includes('request_headers'));
      assert.ok(!(await columnsOf('notifications')).some((column) => column.startsWith('manual_')));
    });

    it("021: an account's failed notifications get a partial index, on every partition; and back", async () => {
      const storage = await olderDatabase();
      cleanups.unshift(() => storage.close());
      await migrateTo(storage.db, '020_manual_retry');
      const id = newId('msg', Date.now());
      await sql`insert into notifications (id, account_id, request_id, subscription_id, event, url, payload, status, attempt_count, created_at, updated_at, completed_at, test, waits_for, has_waiters, run_at)
                values (${id}, 'acc_1', 'req_1', null, 'registered-requests', 'https://example.com/hook', '{}', 'failed', 5, 1000, 1000, 2000, 0, null, 0, null)`.execute(storage.db);
      assert.deepEqual((await migrateTo(storage.db, '021_account_failed_notifications')).applied, ['021_account_failed_notifications']);
      const indexed = async () =>
        dialect === 'postgres'
          ? (
              await sql<{
                table: string;
              }>`select tablename as table from pg_indexes where schemaname = current_schema() and indexdef like '%(account_id, id) WHERE (status = ''failed''::text)%' order by 1`.execute(storage.db)
            ).rows.map((row) => row.table)
          : (await sql<{ table: string }>`select tbl_name as "table" from sqlite_master where type = 'index' and name = 'notifications_account_failed_idx'`.execute(storage.db)).rows.map(
              (row) => row.table,
            );
      const tables = await indexed();
      assert.ok(tables.includes('notifications'), tables.join());
      if (dialect === 'postgres') {
        const partitions = (
          await sql<{ name: string }>`select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid where i.inhparent = 'notifications'::regclass`.execute(storage.db)
        ).rows;
        for (const { name } of partitions) assert.ok(tables.includes(name), `${name} has the index`);
      }
      const found = await sql<{ id: string }>`select id from notifications where account_id = 'acc_1' and status = 'failed' order by id desc`.execute(storage.db);
      assert.deepEqual(
        found.rows.map((row) => row.id),
        [id],
      );
      await migrateTo(storage.db, '020_manual_retry');
      assert.deepEqual(await indexed(), []);
    });

    it('022: attempts logged before have no recorded Retry-After; every partition gets the column; and back', async () => {
      const storage = await olderDatabase();
      cleanups.unshift(() => storage.close());
      await migrateTo(storage.db, '021_account_failed_notifications');
      const id = newId('msg', Date.now());
      await sql`insert into notifications (id, account_id, request_id, subscription_id, event, url, payload, status, attempt_count, created_at, updated_at, test, waits_for, has_waiters, run_at)
                values (${id}, 'acc_1', 'req_1', null, 'registered-requests', 'https://example.com/hook', '{}', 'pending', 1, 1000, 1000, 0, null, 0, 121000)`.execute(storage.db);
      await sql`insert into notification_attempts (notification_id, attempt, started_at, url, status_code, latency_ms, outcome) values (${id}, 1, 1000, 'https://example.com/hook', 503, 5, 'retry')`.execute(
        storage.db,
      );
      assert.deepEqual((await migrateTo(storage.db, '022_attempt_retry_after')).applied, ['022_attempt_retry_after']);
      const attempt = (await sql<Record<string, unknown>>`select retry_after, status_code from notification_attempts`.execute(storage.db)).rows[0]!;
      assert.deepEqual({ ...attempt }, { retry_after: null, status_code: 503 });
      const columnsOf = async (table: string) => (await storage.db.introspection.getTables()).find((t) => t.name === table)?.columns.map((c) => c.name) ?? [];
      if (dialect === 'postgres') {
        const partitions = (
          await sql<{ name: string }>`select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid where i.inhparent = 'notification_attempts'::regclass`.execute(storage.db)
        ).rows;
        assert.ok(partitions.length >= 1);
        for (const { name } of partitions) assert.ok((await columnsOf(name)).includes('retry_after'), `${name}.retry_after`);
      }
      await migrateTo(storage.db, '021_account_failed_notifications');
      assert.ok(!(await columnsOf('notification_attempts')).includes('retry_after'));
    });

    it("024: the jobs lose what served deliveries (dedupe_key, group_key and its index); every job is kept with its columns' defaults and its kind index; and back", async () => {
      const storage = await olderDatabase();
      cleanups.unshift(() => storage.close());
      await migrateTo(storage.db, '023_listen_sessions');
      await sql`insert into jobs (id, kind, payload, state, run_at, attempts, max_attempts, locked_by, locked_at, last_error, dedupe_key, group_key, created_at, updated_at)
                values ('job_register', 'register-request', '{"requestId":"req_1"}', 'pending', 5000, 1, 10, 'w-a:x', 4000, 'boom', null, null, 1000, 1000),
                       ('job_process', 'process-request', '{"requestId":"req_2"}', 'failed', 6000, 10, 10, null, null, 'gone', 'process:req_2', 'acc_1', 1000, 2000)`.execute(storage.db);
      const kept = sql.raw('id, kind, payload, state, run_at, attempts, max_attempts, locked_by, locked_at, last_error, created_at, updated_at');
      const jobs = async () => (await sql<Record<string, unknown>>`select ${kept} from jobs order by id`.execute(storage.db)).rows;
      const columnsOf = async (table: string) => (await storage.db.introspection.getTables()).find((t) => t.name === table)?.columns.map((c) => c.name) ?? [];
      const indexes = async () =>
        dialect === 'postgres'
          ? (
              await sql<{ name: string }>`select indexname as name from pg_indexes where tablename = 'jobs' and schemaname = current_schema() and indexname <> 'jobs_pkey' order by 1`.execute(
                storage.db,
              )
            ).rows.map((row) => row.name)
          : (await sql<{ name: string }>`select name from sqlite_master where type = 'index' and tbl_name = 'jobs' and name not like 'sqlite_autoindex_%' order by 1`.execute(storage.db)).rows.map(
              (row) => row.name,
            );
      const before = await jobs();
      assert.ok((await indexes()).includes('jobs_pending_group_run_at_idx'));

      assert.deepEqual((await migrateTo(storage.db, '024_jobs_without_deliveries')).applied, ['024_jobs_without_deliveries']);
      assert.deepEqual(await jobs(), before, 'every job kept, unchanged');
      const columns = await columnsOf('jobs');
      assert.ok(!columns.includes('dedupe_key') && !columns.includes('group_key'), columns.join());
      assert.deepEqual(await indexes(), ['jobs_pending_kind_run_at_idx']);
      await sql`insert into jobs (id, kind, payload, run_at, max_attempts, created_at, updated_at) values ('job_new', 'register-request', '{"requestId":"req_3"}', 7000, 10, 3000, 3000)`.execute(
        storage.db,
      );
      const added = (await sql<Record<string, unknown>>`select state, attempts, locked_by from jobs where id = 'job_new'`.execute(storage.db)).rows[0]!;
      assert.deepEqual({ ...added, attempts: Number(added.attempts) }, { state: 'pending', attempts: 0, locked_by: null }, 'the defaults are kept');
      await assert.rejects(
        sql`insert into jobs (id, kind, payload, run_at, max_attempts, created_at, updated_at) values ('job_new', 'register-request', '{}', 7000, 10, 3000, 3000)`.execute(storage.db),
        /unique|duplicate/i,
        'and the primary key',
      );

      const after024 = await jobs();
      await migrateTo(storage.db, '023_listen_sessions');
      assert.deepEqual(await jobs(), after024);
      assert.ok((await columnsOf('jobs')).includes('dedupe_key') && (await columnsOf('jobs')).includes('group_key'));
      assert.ok((await indexes()).includes('jobs_pending_group_run_at_idx'));
    });

    it("025: circuits and held notifications; on PostgreSQL the held index is made ON ONLY the log and each partition's is built after the commit (CONCURRENTLY where it has rows), then attached; and back", async () => {
      const storage = await olderDatabase();
      cleanups.unshift(() => storage.close());
      await migrateTo(storage.db, '024_jobs_without_deliveries');
      const id = newId('msg', Date.now());
      await sql`insert into notifications (id, account_id, request_id, subscription_id, event, url, payload, status, attempt_count, created_at, updated_at, test, waits_for, has_waiters, run_at)
                values (${id}, 'acc_1', 'req_1', null, 'registered-requests', 'https://example.com/hook', '{}', 'pending', 0, 1000, 1000, 0, null, 0, 1000)`.execute(storage.db);
      assert.deepEqual((await migrateTo(storage.db, '025_endpoint_circuits')).applied, ['025_endpoint_circuits']);
      const row = (await sql<{ held_at: unknown }>`select held_at from notifications where id = ${id}`.execute(storage.db)).rows[0]!;
      assert.equal(row.held_at, null, 'existing rows are not written: not held');
      if (dialect === 'postgres') {
        const valid = async () => (await sql<{ valid: boolean }>`select indisvalid as valid from pg_index where indexrelid = to_regclass('notifications_held_idx')`.execute(storage.db)).rows[0]?.valid;
        assert.equal(await valid(), false, 'the migration only made it ON ONLY the partitioned log');
        const built = await finishPartitionedIndexes(storage.db as never);
        const partitions = (
          await sql<{ name: string }>`select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid where i.inhparent = 'notifications'::regclass`.execute(storage.db)
        ).rows.map((r) => r.name);
        assert.equal(built.length, partitions.length, built.join());
        assert.equal(await valid(), true, 'valid once every partition has its own');
        assert.deepEqual(await finishPartitionedIndexes(storage.db as never), [], 'nothing left to do');
        // A build that died leaves an invalid partition index: repaired by `rewards migrate`.
        await migrateTo(storage.db, '024_jobs_without_deliveries');
        await migrateTo(storage.db, '025_endpoint_circuits');
        // (A concurrent build that fails leaves its index invalid: a UNIQUE one over duplicates does.)
        const partition = (await sql<{ name: string }>`select tableoid::regclass::text as name from notifications where id = ${id}`.execute(storage.db)).rows[0]!.name;
        const leftover = `notifications_held_idx_${partition}`.slice(0, 63);
        await sql`insert into notifications (id, account_id, request_id, subscription_id, event, url, payload, status, attempt_count, created_at, updated_at, test, waits_for, has_waiters, run_at)
                  select ${`${id}x`}, account_id, request_id, subscription_id, event, url, payload, status, attempt_count, created_at, updated_at, test, waits_for, has_waiters, run_at from notifications where id = ${id}`.execute(
          storage.db,
        );
        await assert.rejects(sql`create unique index concurrently ${sql.id(leftover)} on ${sql.id(partition)} (account_id)`.execute(storage.db));
        assert.ok(!(await finishPartitionedIndexes(storage.db as never)).includes(leftover), 'a start leaves an invalid one alone (it may be another process building it)');
        assert.equal(await valid(), false);
        await finishPartitionedIndexes(storage.db as never, { repair: true });
        assert.equal(await valid(), true, 'repaired by rewards migrate');
      } else {
        const indexes = (await sql<{ name: string }>`select name from sqlite_master where type = 'index' and name = 'notifications_held_idx'`.execute(storage.db)).rows;
        assert.equal(indexes.length, 1);
      }
      await migrateTo(storage.db, '024_jobs_without_deliveries');
      const tables = (await storage.db.introspection.getTables()).map((t) => t.name);
      assert.ok(!tables.includes('endpoint_circuits'));
    });

    it('026: notifications written before carry no trace context; every partition gets the column; and back', async () => {
      const storage = await olderDatabase();
      cleanups.unshift(() => storage.close());
      await migrateTo(storage.db, '025_endpoint_circuits');
      const id = newId('msg', Date.now());
      await sql`insert into notifications (id, account_id, request_id, subscription_id, event, url, payload, status, attempt_count, created_at, updated_at, test, waits_for, has_waiters, run_at)
                values (${id}, 'acc_1', 'req_1', null, 'registered-requests', 'https://example.com/hook', '{}', 'pending', 0, 1000, 1000, 0, null, 0, 1000)`.execute(storage.db);
      assert.deepEqual((await migrateTo(storage.db, '026_notification_trace_parent')).applied, ['026_notification_trace_parent']);
      const row = (await sql<Record<string, unknown>>`select trace_parent, run_at from notifications where id = ${id}`.execute(storage.db)).rows[0]!;
      assert.deepEqual({ ...row, run_at: Number(row.run_at) }, { trace_parent: null, run_at: 1000 }, 'existing rows are not written');
      const traceParent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
      await sql`update notifications set trace_parent = ${traceParent} where id = ${id}`.execute(storage.db);
      assert.equal((await sql<{ trace_parent: string }>`select trace_parent from notifications where id = ${id}`.execute(storage.db)).rows[0]!.trace_parent, traceParent);
      const columnsOf = async (table: string) => (await storage.db.introspection.getTables()).find((t) => t.name === table)?.columns.map((c) => c.name) ?? [];
      if (dialect === 'postgres') {
        const partitions = (
          await sql<{ name: string }>`select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid where i.inhparent = 'notifications'::regclass`.execute(storage.db)
        ).rows;
        assert.ok(partitions.length >= 1);
        for (const { name } of partitions) assert.ok((await columnsOf(name)).includes('trace_parent'), `${name}.trace_parent`);
      }
      await migrateTo(storage.db, '025_endpoint_circuits');
      assert.ok(!(await columnsOf('notifications')).includes('trace_parent'));
      assert.equal((await sql<{ n: number | string }>`select count(*) as n from notifications`.execute(storage.db)).rows[0]!.n.toString(), '1', 'the notification is kept');
    });

    it('a database a newer release migrated: this release refuses it, naming the migration it does not know, and changes nothing', async () => {
      const storage = await olderDatabase();
      cleanups.unshift(() => storage.close());
      await migrateToLatest(storage.db);
      await sql`insert into kysely_migration (name, timestamp) values ('999_from_a_newer_release', '2099-01-01T00:00:00.000Z')`.execute(storage.db);
      await assert.rejects(migrateToLatest(storage.db), (error: Error) => {
        assert.ok(error instanceof DatabaseAheadError, String(error));
        assert.match(error.message, /999_from_a_newer_release/);
        assert.match(error.message, /further ahead than this release/);
        return true;
      });
    });
  });
}

if (testDialects().includes('postgres')) {
  describe('introspection on a database shared by schemas [postgres]', () => {
    it("sees its own schema's tables only, so another schema's migration cannot fail it", async () => {
      const [mine, theirs] = [await createPostgresSchema(), await createPostgresSchema()];
      const own = openStorage(postgresUrl(), { schema: mine.schema, poolSize: 1 });
      const other = openStorage(postgresUrl(), { schema: theirs.schema, poolSize: 1 });
      try {
        await migrateToLatest(own.db);
        await sql`create table elsewhere (id int)`.execute(other.db);
        const tables = await own.db.introspection.getTables({ withInternalKyselyTables: true });
        assert.ok(tables.some((table) => table.name === 'kysely_migration' && table.schema === mine.schema));
        assert.ok(tables.some((table) => table.name === 'notifications' && table.columns.some((column) => column.name === 'payload')));
        assert.ok(tables.every((table) => table.schema === mine.schema));
        assert.ok(!(await own.db.introspection.getTables()).some((table) => table.name.startsWith('kysely_migration')));
        // Up to date already: the migrator finds its own bookkeeping in this schema.
        assert.deepEqual((await migrateToLatest(own.db)).applied, []);
      } finally {
        await own.close();
        await other.close();
      }
    });
  });
}
