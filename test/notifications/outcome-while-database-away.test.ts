// needs: database
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { openStorage, type Storage } from '../../src/storage/database.js';
import { openSqliteDatabase } from '../../src/storage/sqlite-driver.js';
import { startWorker } from '../../src/worker/start-worker.js';
import type { JobWorker } from '../../src/worker/job-worker.js';
import { postgresUrl, testDialects } from '../support/databases.js';
import { eventually, notificationTenant } from '../support/notifications.js';
import { startHttpReceiver, type Receiver } from '../support/receivers.js';
import { startTcpRelay, type TcpRelay } from '../support/tcp-relay.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

/**
 * A delivery whose call was made just as the database went away (a failover, a locked SQLite
 * file) has its outcome recorded once the database serves again, while its lease still holds
 * (src/worker/while-lease-holds.ts): one call, recorded within seconds, not a second call a
 * whole JOB_LEASE later. JOB_LEASE is a minute here, as by default, so waiting it out fails the test.
 */
for (const dialect of testDialects()) {
  describe(`an attempt made as the database goes away is recorded when it is back, not made again [${dialect}]`, () => {
    const port = dialect === 'postgres' ? Number(new URL(postgresUrl()).port || 5432) : 0;
    let relay: TcpRelay | undefined;
    let t: TestApp;
    let worker: JobWorker;
    let receiver: Receiver;
    /** The database away, and back: PostgreSQL silenced behind the relay, or SQLite's write lock held by another connection. */
    let away: () => void = () => {};
    let back: () => void = () => {};
    let direct: Storage;

    before(async () => {
      relay = dialect === 'postgres' ? await startTcpRelay(port) : undefined;
      t = await startTestApp(dialect, {
        JOB_LEASE: '60s',
        DATABASE_HEARTBEAT_TIMEOUT: '500ms',
        DATABASE_CONNECT_TIMEOUT: '500ms',
        DATABASE_POOL_TIMEOUT: '200ms',
        ...(relay ? { DATABASE_URL: relay.url(postgresUrl()) } : {}),
      });
      worker = startWorker(t.deps, { pollIntervalMs: 50 });
      direct = openStorage(t.databaseUrl);
      if (relay) {
        away = () => relay!.silence();
        back = () => relay!.pointTo(port);
      } else {
        const other = openSqliteDatabase(t.config.databaseUrl.slice('sqlite:'.length));
        away = () => other.exec('begin immediate');
        back = () => other.exec('rollback');
      }
    });
    after(async () => {
      await worker.stop();
      await receiver.close();
      await direct.close();
      await t.close();
      await relay?.close();
    });

    it('the receiver is called once, and the attempt is in the log within seconds of the database serving again', async () => {
      let firstCall = true;
      receiver = await startHttpReceiver(async () => {
        if (firstCall) {
          firstCall = false;
          // The call is made; the database goes away before its outcome can be written.
          away();
          await sleep(100);
        }
        return { status: 204 };
      });
      const tenant = await notificationTenant(t);
      await tenant.subscribe({ url: `${receiver.url}/hook` });
      const requestId = await tenant.send();
      await eventually(() => receiver.requests.length === 1, 15_000, 'the first call');
      // Away for a while: longer than the heartbeat and the lock's wait, far shorter than the lease.
      await sleep(2_000);
      back();
      const backAt = Date.now();
      const row = await eventually(
        async () => {
          const found = await direct.db.selectFrom('notifications').select(['id', 'status']).where('request_id', '=', requestId).executeTakeFirst();
          return found?.status === 'succeeded' && found;
        },
        20_000,
        'the attempt recorded',
      );
      const recordedAfterMs = Date.now() - backAt;
      assert.ok(recordedAfterMs < 10_000, `recorded ${recordedAfterMs} ms after the database was back (JOB_LEASE 60 s)`);
      const attempts = await direct.db.selectFrom('notification_attempts').select(['outcome']).where('notification_id', '=', row.id).execute();
      assert.deepEqual(
        attempts.map((attempt) => attempt.outcome),
        ['succeeded'],
      );
      await sleep(500);
      assert.equal(receiver.requests.length, 1, 'the receiver was called again');
    });
  });
}
