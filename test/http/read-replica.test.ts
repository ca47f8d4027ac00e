// needs: database
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { testDialects } from '../support/databases.js';
import { eventually, notificationTenant } from '../support/notifications.js';
import { startHttpReceiver, type Receiver, unusedPort } from '../support/receivers.js';
import { startTcpRelay } from '../support/tcp-relay.js';
import { api, startTestApp, type TestApp } from '../support/test-app.js';

/**
 * DATABASE_READ_URL (docs/deployment.md, "Reads from a replica"): the delivery log's reads go to a
 * real hot standby streaming from the test server (scripts/postgres-replica-setup.sh; CI sets
 * TEST_POSTGRES_READ_URL). Which server answered is told by pausing the standby's replay: what the
 * primary wrote since is missing from the lists, and found all the same by its id.
 */
const READ_URL = process.env.TEST_POSTGRES_READ_URL;

if (testDialects().includes('postgres')) {
  describe('reads from a replica (DATABASE_READ_URL) [postgres]', { skip: READ_URL ? false : 'set TEST_POSTGRES_READ_URL (scripts/postgres-replica-setup.sh)' }, () => {
    let t: TestApp;
    let receiver: Receiver;
    let replica: pg.Client;
    before(async () => {
      if (!READ_URL) return;
      t = await startTestApp('postgres', { DATABASE_READ_URL: READ_URL });
      receiver = await startHttpReceiver();
      replica = new pg.Client({ connectionString: READ_URL });
      await replica.connect();
    });
    after(async () => {
      if (!READ_URL) return;
      await replica.query('select pg_wal_replay_resume()').catch(() => {});
      await replica.end();
      await receiver.close();
      await t.close();
    });

    const caughtUp = async () => (await replica.query<{ lag: boolean }>('select pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() as lag')).rows[0]!.lag;

    it('lists come from the replica (behind by its lag), a notification by its id from the primary when the replica does not have it yet, and the lag is a metric', async () => {
      const tenant = await notificationTenant(t);
      const subscription = await tenant.subscribe({ url: `${receiver.url}/hook` });
      const testSend = async () => {
        const sent = await api(t.url, 'POST', `/v2/subscriptions/${subscription._id}/test`, { token: tenant.token });
        assert.equal(sent.status, 202);
        return sent.body.notificationId as string;
      };
      const listed = async () => ((await api(t.url, 'GET', '/v2/notifications', { token: tenant.token })).body.data as Array<{ id: string }>).map((n) => n.id);
      const first = await testSend();
      await eventually(async () => (await listed()).includes(first), 10_000, 'the first test send on the replica');

      await replica.query('select pg_wal_replay_pause()');
      try {
        await eventually(async () => (await replica.query<{ paused: boolean }>('select pg_is_wal_replay_paused() as paused')).rows[0]!.paused, 5_000, 'replay paused');
        const second = await testSend();
        assert.deepEqual(await listed(), [first], 'the list is the replica as it stands, without what the primary wrote since');
        assert.equal((await api(t.url, 'GET', `/v2/notifications/${second}`, { token: tenant.token })).status, 200, 'by its id: found on the primary');
        const stats = await api(t.url, 'GET', `/v2/subscriptions/${subscription._id}/stats?window=1h`, { token: tenant.token });
        assert.equal(stats.status, 200);
        assert.match(await (await fetch(`${t.url}/metrics`)).text(), /^rewards_database_read_lag_seconds [0-9.e+-]+$/m);
        assert.equal(await caughtUp(), false);
      } finally {
        await replica.query('select pg_wal_replay_resume()');
      }
      await eventually(async () => (await listed()).length === 2, 10_000, 'the list once replay resumed');
    });

    it('a replica that cannot serve leaves the reads to the primary', async () => {
      // Nothing listens on this port: every read on the "replica" is refused at once.
      const other = await startTestApp('postgres', { DATABASE_READ_URL: `postgres://rewards:rewards@127.0.0.1:${await unusedPort()}/rewards_test`, DATABASE_CONNECT_TIMEOUT: '500ms' });
      try {
        const tenant = await notificationTenant(other);
        const subscription = await tenant.subscribe({ url: `${receiver.url}/hook` });
        const sent = await api(other.url, 'POST', `/v2/subscriptions/${subscription._id}/test`, { token: tenant.token });
        const list = await api(other.url, 'GET', '/v2/notifications', { token: tenant.token });
        assert.equal(list.status, 200);
        assert.deepEqual(
          list.body.data.map((n: { id: string }) => n.id),
          [sent.body.notificationId],
        );
        assert.equal((await api(other.url, 'GET', `/v2/subscriptions/${subscription._id}/stats`, { token: tenant.token })).status, 200);
        assert.equal((await api(other.url, 'GET', '/v2/requests', { token: tenant.token })).status, 200);
      } finally {
        await other.close();
      }
    });

    it('a replica gone silent is not waited for: once its heartbeat goes unanswered, the reads go to the primary at once', async () => {
      const relay = await startTcpRelay(Number(new URL(READ_URL!).port));
      const other = await startTestApp('postgres', { DATABASE_READ_URL: relay.url(READ_URL!), DATABASE_HEARTBEAT_TIMEOUT: '500ms', DATABASE_CONNECT_TIMEOUT: '5s' });
      try {
        const tenant = await notificationTenant(other);
        assert.equal((await api(other.url, 'GET', '/v2/notifications', { token: tenant.token })).status, 200);
        relay.silence();
        await eventually(() => !other.deps.replicaAnswering(), 10_000, 'the replica found silent');
        const started = Date.now();
        assert.equal((await api(other.url, 'GET', '/v2/notifications', { token: tenant.token })).status, 200);
        assert.ok(Date.now() - started < 2_000, `the read waited ${Date.now() - started} ms (DATABASE_CONNECT_TIMEOUT 5s)`);
      } finally {
        await other.close();
        await relay.close();
      }
    });
  });
}
