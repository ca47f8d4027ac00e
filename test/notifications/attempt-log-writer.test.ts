// needs: database
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { claimDeliveries, RUNS_WITHOUT_OUTCOME, type Delivery } from '../../src/storage/deliveries.js';
import { findNotification, insertNotifications, listAttempts, newNotificationRow } from '../../src/storage/repositories/notifications.js';
import { notificationDeliverer } from '../../src/worker/notifications/deliver-notification.js';
import { ANSWER_NOT_STORED, AttemptLogWriter, type AttemptSettlement } from '../../src/worker/notifications/attempt-log-writer.js';
import { testDialects } from '../support/databases.js';
import { startTestDatabase, type TestDatabase } from '../support/test-database.js';

/**
 * The group commit of attempt outcomes: one attempt the database refuses must not keep the others
 * of its commit from being recorded (each unrecorded attempt's call would be made again).
 */
for (const dialect of testDialects()) {
  describe(`attempt log group commit [${dialect}]`, () => {
    let t: TestDatabase;
    before(async () => {
      t = await startTestDatabase(dialect);
    });
    after(() => t.close());

    /** `count` pending notifications (each its own delivery), claimed by one worker; `runsBefore`: runs each had before without an outcome. */
    async function claimed(count: number, runsBefore = 0) {
      const client = await t.createClientAccount();
      const now = Date.now();
      const rows = Array.from({ length: count }, (_, i) => ({
        ...newNotificationRow({ accountId: client.accountId, requestId: `req_${i}`, subscriptionId: null, event: 'registered-requests', url: 'http://127.0.0.1:9/hook', payload: '{}' }, now),
        runs: runsBefore,
      }));
      await insertNotifications(t.deps.db, rows);
      const deliveries = await claimDeliveries(t.deps.db, { workerId: 'w-test', limit: count, leaseMs: 60_000, now: Date.now() });
      assert.equal(deliveries.length, count);
      return deliveries.map((delivery) => ({ delivery, notificationId: delivery.id }));
    }

    const settlement = (delivery: Delivery, notificationId: string, responseBody: string, url = 'http://127.0.0.1:9/hook'): AttemptSettlement => ({
      delivery,
      accountId: delivery.accountId,
      attempt: {
        notification_id: notificationId,
        attempt: 1,
        started_at: Date.now(),
        url,
        status_code: 500,
        latency_ms: 3,
        response_body: responseBody,
        error: 'callback answered HTTP 500',
        outcome: 'retry',
        request_headers: null,
        retry_after: null,
      },
      status: 'pending',
      nextAttemptAt: Date.now() + 60_000,
      now: Date.now(),
      countsFor: null,
      endpointUrl: null,
      notification: { event: 'registered-requests', requestId: 'req_0', test: false },
    });

    it('an attempt the database refuses is rejected alone; the others of its commit are recorded, and one whose notification is gone is not', async () => {
      const [good, other, refused, gone] = await claimed(4);
      // An attempt the database refuses with or without its answer: a NUL in its URL (PostgreSQL's
      // text refuses it; on SQLite a trigger does).
      if (dialect === 'sqlite') {
        await sql.raw(`create trigger refuse_nul_url before insert on notification_attempts when instr(new.url, char(0)) > 0 begin select raise(abort, 'refused'); end`).execute(t.deps.db);
      }
      await t.deps.db.deleteFrom('notifications').where('id', '=', gone!.notificationId).execute();
      const writer = new AttemptLogWriter(t.deps.db);
      const outcomes = await Promise.allSettled([
        writer.settle(settlement(good!.delivery, good!.notificationId, 'boom')),
        writer.settle(settlement(refused!.delivery, refused!.notificationId, 'boom', 'http://127.0.0.1:9/\u0000')),
        writer.settle(settlement(other!.delivery, other!.notificationId, 'boom')),
        writer.settle(settlement(gone!.delivery, gone!.notificationId, 'boom')),
      ]);
      assert.deepEqual(
        outcomes.map((o) => o.status),
        ['fulfilled', 'rejected', 'fulfilled', 'fulfilled'],
      );
      assert.deepEqual(
        outcomes.map((o) => (o.status === 'fulfilled' ? o.value : 'rejected')),
        [true, 'rejected', true, false],
        'the one whose notification is gone is not recorded',
      );
      for (const { notificationId } of [good!, other!]) {
        const attempts = await listAttempts(t.deps.db, notificationId);
        assert.deepEqual(
          attempts.map((a) => [a.attempt, a.response_body]),
          [[1, 'boom']],
        );
      }
      const unsettled = (await findNotification(t.deps.db, refused!.notificationId))!;
      assert.deepEqual([unsettled.attempt_count, unsettled.lease], [0, refused!.delivery.lease], 'the refused one is still held, to be run again after its lease');
      if (dialect === 'sqlite') await sql.raw('drop trigger refuse_nul_url').execute(t.deps.db);
    });

    it('an answer the database refuses is left out, and its attempt is recorded without it', async () => {
      const [entry] = await claimed(1);
      // PostgreSQL's text refuses a NUL character (deliver.ts replaces it before it gets here, so it
      // stands for any answer a database refuses); SQLite stores it, so a trigger refuses it there.
      const refused = 'binary\u0000answer';
      if (dialect === 'sqlite') {
        await sql.raw(`create trigger refuse_nul before insert on notification_attempts when instr(new.response_body, char(0)) > 0 begin select raise(abort, 'refused'); end`).execute(t.deps.db);
      }
      const writer = new AttemptLogWriter(t.deps.db);
      const answered = settlement(entry!.delivery, entry!.notificationId, refused);
      assert.equal(await writer.settle({ ...answered, attempt: { ...answered.attempt, retry_after: '120' } }), true);
      const [attempt] = await listAttempts(t.deps.db, entry!.notificationId);
      assert.equal(attempt!.response_body, null);
      assert.equal(attempt!.retry_after, null, "the answer's Retry-After is left out with it");
      assert.equal(attempt!.error, ANSWER_NOT_STORED);
      assert.equal(attempt!.status_code, 500);
      assert.equal(attempt!.outcome, 'retry');
    });

    it("a notification's next attempt is its run_at: shown while it waits, null in flight and once done", async () => {
      const [entry] = await claimed(1);
      assert.equal((await findNotification(t.deps.db, entry!.notificationId))!.next_attempt_at, null, 'in flight');
      const retryAt = Date.now() + 60_000;
      assert.equal(await new AttemptLogWriter(t.deps.db).settle({ ...settlement(entry!.delivery, entry!.notificationId, 'boom'), nextAttemptAt: retryAt }), true);
      const waiting = (await findNotification(t.deps.db, entry!.notificationId))!;
      assert.deepEqual([waiting.status, waiting.attempt_count, waiting.next_attempt_at], ['pending', 1, retryAt]);
    });

    it('a delivery whose runs keep ending without an outcome fails its notification at the last run', async () => {
      const [entry] = await claimed(1, RUNS_WITHOUT_OUTCOME - 1);
      assert.equal(entry!.delivery.runs, RUNS_WITHOUT_OUTCOME, 'this claim is its last run');
      await notificationDeliverer(t.deps).runFailed(entry!.delivery, new Error('database unreachable'));
      const failed = (await findNotification(t.deps.db, entry!.notificationId))!;
      assert.deepEqual([failed.status, failed.last_error, failed.next_attempt_at], ['failed', 'the delivery could not be run: database unreachable', null]);
    });
  });
}
