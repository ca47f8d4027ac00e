// needs: database
// NOTIFICATION_RETENTION (docs/notifications.md, "Retention"): the worker deletes ended
// notifications older than the retention, with their attempts, in batches;
// pending ones are kept however old, and so is everything newer.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { deleteOldNotifications } from '../../src/services/notification-retention.js';
import { insertNotifications, newNotificationRow, recordAttempts } from '../../src/storage/repositories/notifications.js';
import type { NotificationStatus } from '../../src/domain/notifications/notification.js';
import { purgeExpired } from '../../src/worker/start-worker.js';
import { testDialects } from '../support/databases.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

const DAY = 86_400_000;

for (const dialect of testDialects()) {
  describe(`notification retention [${dialect}]`, () => {
    let t: TestApp;
    before(async () => {
      t = await startTestApp(dialect, { NOTIFICATION_RETENTION: '90d' });
    });
    after(async () => t?.close());

    /** A notification created `ageDays` ago, ended as `status` with one attempt (pending: none). */
    const notification = async (accountId: string, ageDays: number, status: NotificationStatus) => {
      const at = Date.now() - ageDays * DAY;
      // Ended ones as their last attempt left them, under the lease it ran under.
      const lease = status === 'pending' ? null : 'w-test:retention';
      const row = {
        ...newNotificationRow({ accountId, requestId: `req_${ageDays}_${status}`, subscriptionId: null, event: 'registered-requests', url: 'https://example.com/hook', payload: '{}' }, at),
        lease,
      };
      await insertNotifications(t.deps.db, [row]);
      if (lease !== null) {
        const attempt = {
          notification_id: row.id,
          attempt: 1,
          started_at: at,
          url: row.url,
          status_code: status === 'succeeded' ? 204 : 500,
          latency_ms: 3,
          response_body: null,
          error: null,
          outcome: status as 'succeeded' | 'failed',
          request_headers: null,
          retry_after: null,
        };
        await recordAttempts(t.deps.db, [{ attempt, lease, status, nextAttemptAt: null, now: at }]);
      }
      return row.id;
    };
    const exists = async (id: string) => (await t.deps.db.selectFrom('notifications').select('id').where('id', '=', id).executeTakeFirst()) !== undefined;
    const attempts = async (id: string) => (await t.deps.db.selectFrom('notification_attempts').select('attempt').where('notification_id', '=', id).execute()).length;

    it('deletes ended notifications past the retention with their attempts, in batches; keeps pending and newer ones', async () => {
      const { accountId } = await t.createClientAccount();
      const old = [
        await notification(accountId, 120, 'succeeded'),
        await notification(accountId, 100, 'failed'),
        await notification(accountId, 95, 'succeeded'),
        await notification(accountId, 91, 'failed'),
        await notification(accountId, 91, 'succeeded'),
      ];
      const oldPending = await notification(accountId, 100, 'pending');
      const recent = [await notification(accountId, 89, 'succeeded'), await notification(accountId, 1, 'failed')];

      assert.equal((await deleteOldNotifications(t.deps.db, 90 * DAY, Date.now(), 2)).deleted, old.length, 'three batches of 2, 2 and 1');
      for (const id of old) {
        assert.equal(await exists(id), false, `${id} deleted`);
        assert.equal(await attempts(id), 0, `${id}'s attempts deleted`);
      }
      assert.equal(await exists(oldPending), true, 'a pending notification is kept however old');
      for (const id of recent) {
        assert.equal(await exists(id), true, `${id} kept`);
        assert.equal(await attempts(id), 1);
      }
      assert.equal((await deleteOldNotifications(t.deps.db, 90 * DAY, Date.now())).deleted, 0, 'nothing left to delete');
    });

    it("the worker's purge applies NOTIFICATION_RETENTION; 0 keeps everything", async () => {
      const { accountId } = await t.createClientAccount();
      const id = await notification(accountId, 200, 'succeeded');
      await purgeExpired({ ...t.deps, config: { ...t.deps.config, notificationRetentionMs: 0 } });
      assert.equal(await exists(id), true, 'kept with 0');
      await purgeExpired(t.deps);
      assert.equal(await exists(id), false, 'deleted past 90 days');
    });
  });
}
