// needs: database
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startWorker } from '../../src/worker/start-worker.js';
import { TEST_SEND_WINDOW_MS, TEST_SENDS_PER_WINDOW } from '../../src/services/test-sends.js';
import type { JobWorker } from '../../src/worker/job-worker.js';
import { startAuthorizationServer } from '../support/authorization-server.js';
import { testDialects } from '../support/databases.js';
import { eventually, verifyWebhook } from '../support/notifications.js';
import { startHttpReceiver, startHttpsReceiver, type Receiver } from '../support/receivers.js';
import { testPki, writePkiFiles, type TestPki } from '../support/test-pki.js';
import { api, startTestApp, type TestApp } from '../support/test-app.js';

/**
 * POST /subscriptions/{id}/test against real receivers: the sample body of the contract's shape
 * through the normal path (URL, authorization, custom headers, signature), `x-webhook-test: true`,
 * `"test": true` in the delivery log, one attempt, inactive subscriptions included.
 */
for (const dialect of testDialects()) {
  describe(`test sends [${dialect}]`, () => {
    let pki: TestPki;
    let t: TestApp;
    let worker: JobWorker;
    let token: string;
    let readOnly: string;

    before(async () => {
      pki = await testPki();
      const files = writePkiFiles(pki);
      t = await startTestApp(dialect, { RETRY_INTERVAL: '50ms', RETRY_MAX_ATTEMPTS: '3', MTLS_CERT_FILE: files.certFile, MTLS_KEY_FILE: files.keyFile, MTLS_CA_FILE: files.caFile });
      worker = startWorker(t.deps, { pollIntervalMs: 25 });
      const client = await t.createClientAccount();
      token = await t.token(client);
      readOnly = await t.token(client, 'subscriptions:read');
    });
    after(async () => {
      await worker.stop();
      await t.close();
    });

    const subscribe = async (event: string, callback: Record<string, unknown>, extra: Record<string, unknown> = {}) => {
      const created = await api(t.url, 'POST', '/v2/subscriptions', { token, body: { event, callback, ...extra } });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      return created.body as { _id: string; secret: string };
    };
    const testSend = (id: string, as = token) => api(t.url, 'POST', `/v2/subscriptions/${id}/test`, { token: as });
    const finished = (notificationId: string) =>
      eventually(
        async () => {
          const detail = await api(t.url, 'GET', `/v2/notifications/${notificationId}`, { token });
          return detail.status === 200 && detail.body.status !== 'pending' && detail.body;
        },
        15_000,
        `test send ${notificationId}`,
      );

    it('sends a sample of the exact shape, signed, with Bearer and custom headers, marked as a test in the call and the log', async () => {
      const receiver = await startHttpReceiver();
      try {
        for (const event of ['registered-requests', 'processed-requests']) {
          const sub = await subscribe(event, { url: `${receiver.url}/${event}`, authorization: { Bearer: 'tok-123' }, customHeaders: { 'x-tenant': 'acme' } });
          const sent = await testSend(sub._id);
          assert.equal(sent.status, 202, JSON.stringify(sent.body));
          assert.deepEqual(Object.keys(sent.body), ['notificationId']);
          const log = await finished(sent.body.notificationId);
          assert.equal(log.status, 'succeeded');
          assert.equal(log.test, true);
          assert.equal(log.attemptCount, 1);
          const call = receiver.requests.find((r) => r.headers['webhook-id'] === sent.body.notificationId)!;
          assert.ok(call, 'the receiver got the test send under its notification id');
          assert.equal(call.headers['x-webhook-test'], 'true');
          assert.equal(call.headers['x-webhook-event'], event);
          assert.equal(call.headers.authorization, 'Bearer tok-123');
          assert.equal(call.headers['x-tenant'], 'acme');
          const body = verifyWebhook(sub.secret, call);
          assert.match(String(body.id), /^req_test_/);
          assert.equal(log.requestId, body.id);
          if (event === 'registered-requests') {
            assert.deepEqual(Object.keys(body).sort(), ['id', 'rewardValue']);
          } else {
            assert.deepEqual(Object.keys(body).sort(), ['canceled', 'concluded', 'delivered', 'id', 'rewardValue']);
            const delivered = (body.delivered as any[])[0];
            const canceled = (body.canceled as any[])[0];
            assert.deepEqual(Object.keys(delivered).sort(), ['deliveryDetail', 'name', 'quantity', 'title', 'value']);
            assert.deepEqual(Object.keys(delivered.deliveryDetail.info).sort(), ['bucket', 'coupon', 'description', 'name', 'paymentId', 'requestId', 'rewardId', 'triggerId']);
            assert.match(delivered.deliveryDetail.info.coupon, /^TEST-COUPON-/);
            assert.deepEqual(Object.keys(canceled).sort(), ['deliveryDetail', 'name', 'priceless', 'quantity', 'title', 'value']);
            assert.deepEqual(Object.keys(canceled.deliveryDetail.info).sort(), ['description', 'name', 'paymentId', 'reason', 'reasonCode']);
          }
          const listed = await api(t.url, 'GET', `/v2/notifications?subscriptionId=${sub._id}`, { token });
          assert.deepEqual(
            listed.body.data.map((n: any) => [n.id, n.test]),
            [[sent.body.notificationId, true]],
          );
        }
      } finally {
        await receiver.close();
      }
    });

    it('an inactive subscription is sent to as well; a failing receiver gets exactly one call (no retry)', async () => {
      const receiver = await startHttpReceiver(() => ({ status: 500, body: 'down' }));
      try {
        const sub = await subscribe('registered-requests', { url: `${receiver.url}/down` }, { active: false });
        const sent = await testSend(sub._id);
        assert.equal(sent.status, 202);
        const log = await finished(sent.body.notificationId);
        assert.equal(log.status, 'failed');
        assert.equal(log.lastStatusCode, 500);
        await new Promise((resolve) => setTimeout(resolve, 300)); // six retry intervals: none comes
        assert.equal(receiver.requests.length, 1);
        const detail = await api(t.url, 'GET', `/v2/notifications/${sent.body.notificationId}`, { token });
        assert.deepEqual(
          detail.body.attempts.map((a: any) => a.outcome),
          ['failed'],
        );
      } finally {
        await receiver.close();
      }
    });

    it('OAuth2 (a real authorization server) and mTLS take the normal path', async () => {
      const as = await startAuthorizationServer({ accessTokenTtlSeconds: 300 });
      const plain = await startHttpReceiver(async (request) => {
        const bearer = /^Bearer (.+)$/.exec(String(request.headers.authorization ?? ''))?.[1];
        if (!bearer) return { status: 401 };
        await as.verifyAccessToken(bearer);
        return { status: 204 };
      });
      const tls = await startHttpsReceiver({ key: pki.server.key, cert: pki.server.cert, ca: pki.ca.cert, requireClientCertificate: true });
      try {
        const oauth2 = { client_id: as.clientId, client_secret: as.clientSecret, url: as.tokenUrl, audience: as.audience };
        const viaOAuth2 = await subscribe('processed-requests', { url: `${plain.url}/oauth2`, authorization: { oauth2 } });
        const viaMtls = await subscribe('processed-requests', { url: `${tls.url}/mtls`, authorization: { mtls: {} } });
        for (const [sub, receiver] of [
          [viaOAuth2, plain],
          [viaMtls, tls],
        ] as Array<[{ _id: string; secret: string }, Receiver]>) {
          const sent = await testSend(sub._id);
          assert.equal(sent.status, 202);
          const log = await finished(sent.body.notificationId);
          assert.equal(log.status, 'succeeded', JSON.stringify(log));
          const call = receiver.requests.find((r) => r.headers['webhook-id'] === sent.body.notificationId)!;
          assert.equal(call.headers['x-webhook-test'], 'true');
          verifyWebhook(sub.secret, call);
        }
        assert.equal(as.tokenRequests.length, 1);
        assert.equal(tls.requests.at(-1)!.clientCertificateCN, pki.clientCommonName);
      } finally {
        await plain.close();
        await tls.close();
        await as.close();
      }
    });

    it("unknown and other accounts' subscriptions are 404, a read-only token 403; /v1 serves it too", async () => {
      const receiver = await startHttpReceiver();
      try {
        assert.equal((await testSend('sub_unknown')).status, 404);
        const other = await t.createClientAccount();
        const otherToken = await t.token(other);
        const theirs = await api(t.url, 'POST', '/v2/subscriptions', { token: otherToken, body: { event: 'registered-requests', callback: { url: `${receiver.url}/theirs` } } });
        assert.equal((await testSend(theirs.body._id)).status, 404);
        const mine = await subscribe('registered-requests', { url: `${receiver.url}/mine` });
        assert.equal((await testSend(mine._id, readOnly)).status, 403);
        assert.equal((await api(t.url, 'POST', `/v1/subscriptions/${mine._id}/test`, { token })).status, 202, 'under /v1 too');

        await new Promise((resolve) => setTimeout(resolve, 200));
        assert.equal(receiver.requests.filter((r) => r.path === '/mine').length, 1, 'only the /v1 send reached the receiver');
        const documented = (await api(t.url, 'GET', '/openapi.json')).body.paths['/v2/subscriptions/{subscriptionId}/test'];
        assert.ok(documented?.post?.responses?.['202']);
      } finally {
        await receiver.close();
      }
    });
  });

  describe(`test sends, limited per subscription [${dialect}]`, () => {
    let t: TestApp;
    before(async () => {
      // No worker: the limit counts test sends made, whatever became of them.
      t = await startTestApp(dialect);
    });
    after(() => t.close());

    it(`${TEST_SENDS_PER_WINDOW} a minute per subscription; the next is a 429 with Retry-After, other subscriptions unaffected; the window slides`, async () => {
      const client = await t.createClientAccount();
      const token = await t.token(client);
      const subscribe = async () => (await api(t.url, 'POST', '/v2/subscriptions', { token, body: { event: 'registered-requests', callback: { url: 'http://127.0.0.1:9/hook' } } })).body._id as string;
      const [busy, other] = [await subscribe(), await subscribe()];
      for (let i = 0; i < TEST_SENDS_PER_WINDOW; i++) assert.equal((await api(t.url, 'POST', `/v2/subscriptions/${busy}/test`, { token })).status, 202);
      const refused = await api(t.url, 'POST', `/v2/subscriptions/${busy}/test`, { token });
      assert.equal(refused.status, 429, JSON.stringify(refused.body));
      const retryAfter = Number(refused.headers.get('retry-after'));
      assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
      assert.match(refused.body.detail, /at most 10 test sends a minute per subscription/);
      assert.equal((await t.deps.db.selectFrom('notifications').select('id').where('subscription_id', '=', busy).execute()).length, TEST_SENDS_PER_WINDOW, 'nothing written for the refused one');
      assert.equal((await api(t.url, 'POST', `/v2/subscriptions/${other}/test`, { token })).status, 202);
      // A minute after the oldest one, there is room for one more.
      const oldest = await t.deps.db.selectFrom('notifications').select(['id', 'created_at']).where('subscription_id', '=', busy).orderBy('created_at').executeTakeFirstOrThrow();
      await t.deps.db
        .updateTable('notifications')
        .set({ created_at: Number(oldest.created_at) - TEST_SEND_WINDOW_MS })
        .where('id', '=', oldest.id)
        .execute();
      assert.equal((await api(t.url, 'POST', `/v2/subscriptions/${busy}/test`, { token })).status, 202);
      assert.equal((await api(t.url, 'POST', `/v2/subscriptions/${busy}/test`, { token })).status, 429);
    });
  });

  describe(`test sends and the address policy [${dialect}]`, () => {
    let t: TestApp;
    before(async () => {
      t = await startTestApp(dialect, { CALLBACK_ALLOW_PRIVATE_NETWORKS: 'false' });
    });
    after(() => t.close());

    it('a callback URL the policy refuses now (it passed when saved) is a 400 naming callback.url; nothing is written or sent', async () => {
      const client = await t.createClientAccount();
      const token = await t.token(client);
      const created = await api(t.url, 'POST', '/v2/subscriptions', { token, body: { event: 'registered-requests', callback: { url: 'https://93.184.215.14/hook' } } });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      // The address behind it changed since (a DNS change does this): now it is this machine.
      await t.deps.db.updateTable('subscriptions').set({ callback_url: 'http://127.0.0.1:9/hook' }).where('id', '=', created.body._id).execute();
      const refused = await api(t.url, 'POST', `/v2/subscriptions/${created.body._id}/test`, { token });
      assert.equal(refused.status, 400, JSON.stringify(refused.body));
      assert.equal(refused.body.errors[0].path, 'callback.url');
      assert.match(refused.body.errors[0].message, /loopback/);
      assert.match(refused.body.detail, /address policy/);
      assert.equal((await t.deps.db.selectFrom('notifications').select('id').execute()).length, 0);
    });
  });
}
