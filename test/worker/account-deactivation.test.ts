// needs: database
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { REGISTER_REQUEST_JOB } from '../../src/domain/requests/job-kinds.js';
import { buildJobHandlers } from '../../src/worker/registry.js';
import { startWorker } from '../../src/worker/start-worker.js';
import type { JobWorker } from '../../src/worker/job-worker.js';
import { testDialects } from '../support/databases.js';
import { insertExperience, prizeStock } from '../support/experiences.js';
import { eventually } from '../support/notifications.js';
import { startHttpReceiver, type Receiver } from '../support/receivers.js';
import { waitForStatus } from '../support/requests.js';
import { api, startTestApp, type TestApp } from '../support/test-app.js';

/**
 * Work an account's clients handed in before an operator deactivated it (docs/requests.md,
 * "Deactivated accounts"): a request accepted (202) but not registered yet is rejected with
 * ACCOUNT_INACTIVE, one registered but not processed yet is processed with every prize canceled,
 * so no stock is taken after the cut; and no notification of the account leaves while it is
 * inactive. Reactivated, the client recovers them like notifications an endpoint missed.
 */
for (const dialect of testDialects()) {
  describe(`work accepted before an account was deactivated [${dialect}]`, () => {
    let t: TestApp;
    let receiver: Receiver;
    let operator: string;
    const workers: JobWorker[] = [];

    before(async () => {
      t = await startTestApp(dialect, { RETRY_INTERVAL: '50ms', RETRY_MAX_ATTEMPTS: '3' });
      receiver = await startHttpReceiver();
      operator = await t.token(t.operator, 'admin');
    });
    after(async () => {
      for (const worker of workers) await worker.stop();
      await receiver.close();
      await t.close();
    });

    it('is not processed into prizes after the cut (stock unchanged), and nothing of it is sent until the account is back', async () => {
      const client = await t.createClientAccount();
      const token = await t.token(client);
      const experience = await insertExperience(t.deps.db, client.accountId, { name: 'summer', prizes: [{ id: 'cpn', kind: 'coupon', value: 10, stock: 5 }] });
      const subscriptions: string[] = [];
      for (const event of ['registered-request', 'processed-request']) {
        const created = await api(t.url, 'POST', '/v2/subscriptions', { token, body: { event, callback: { url: `${receiver.url}/${event}` } } });
        assert.equal(created.status, 201, JSON.stringify(created.body));
        subscriptions.push(created.body._id);
      }
      const send = async () => {
        const accepted = await api(t.url, 'POST', '/v2/requests', { token, body: { experience: 'summer' } });
        assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
        return accepted.body.id as string;
      };
      const asOperator = (path: string) => `${path}${path.includes('?') ? '&' : '?'}accountId=${client.accountId}`;

      // One request registered before the cut (a worker that only registers), one only accepted.
      const registeredBefore = await send();
      const registrar = startWorker(t.deps, { autoStart: false, deliverer: null, handlers: { [REGISTER_REQUEST_JOB]: buildJobHandlers(t.deps)[REGISTER_REQUEST_JOB]! } });
      await registrar.runUntilIdle();
      await registrar.stop();
      assert.equal((await api(t.url, 'GET', `/v2/requests/${registeredBefore}`, { token })).body.status, 'registered');
      const acceptedBefore = await send();

      const cut = await api(t.url, 'PATCH', `/v2/admin/accounts/${client.accountId}`, { token: operator, body: { active: false } });
      assert.equal(cut.status, 200, JSON.stringify(cut.body));
      workers.push(startWorker(t.deps, { pollIntervalMs: 25 }));

      // The account's own tokens are refused now: the operator reads for it.
      const rejected = await waitForStatus(t.url, operator, asOperator(acceptedBefore), ['rejected', 'registered', 'processed']);
      assert.equal(rejected.status, 'rejected');
      assert.equal(rejected.errorCode, 'ACCOUNT_INACTIVE');
      const processed = await waitForStatus(t.url, operator, asOperator(registeredBefore), ['processed', 'failed']);
      assert.equal(processed.status, 'processed');
      assert.deepEqual(processed.delivered, []);
      assert.deepEqual(
        processed.canceled.map((item: any) => [item.deliveryDetail.info.reasonCode, item.deliveryDetail.info.reason]),
        [[3, 'account inactive']],
      );
      assert.equal(processed.rewardValue, undefined);
      assert.equal(await prizeStock(t.deps.db, experience.id, 'cpn'), 5, 'no stock taken after the cut');

      // Recorded, not sent: each of the three notifications ends failed without a call.
      const log = async () => (await api(t.url, 'GET', asOperator('/v2/notifications?limit=50'), { token: operator })).body.data as any[];
      const ended = await eventually(
        async () => {
          const notifications = await log();
          return notifications.length === 3 && notifications.every((n) => n.status === 'failed') && notifications;
        },
        15_000,
        'the three notifications to end',
      );
      assert.ok(
        ended.every((n) => /account is inactive/.test(n.lastError)),
        JSON.stringify(ended),
      );
      assert.equal(receiver.requests.length, 0, 'nothing reached the receiver');

      // Back on: the client recovers what it missed, as after an outage of its endpoint.
      assert.equal((await api(t.url, 'PATCH', `/v2/admin/accounts/${client.accountId}`, { token: operator, body: { active: true } })).status, 200);
      const renewed = await t.token(client);
      for (const id of subscriptions) {
        const recovered = await api(t.url, 'POST', `/v2/subscriptions/${id}/recover`, { token: renewed, body: { since: new Date(Date.now() - 3_600_000).toISOString() } });
        assert.equal(recovered.status, 202, JSON.stringify(recovered.body));
      }
      await eventually(() => receiver.requests.length === 3, 15_000, 'the recovered notifications');
      const bodies = receiver.requests.map((request) => JSON.parse(request.body));
      assert.deepEqual(
        bodies.find((body) => body.id === acceptedBefore),
        { id: acceptedBefore, errorCode: 'ACCOUNT_INACTIVE', message: rejected.message },
      );
      assert.equal(bodies.find((body) => body.id === registeredBefore && 'canceled' in body).canceled[0].deliveryDetail.info.reasonCode, 3);
    });
  });
}
