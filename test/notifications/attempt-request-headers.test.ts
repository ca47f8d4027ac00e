// needs: database
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type { IncomingHttpHeaders } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { maskRequestHeaders } from '../../src/domain/notifications/request-headers.js';
import { startWorker } from '../../src/worker/start-worker.js';
import type { JobWorker } from '../../src/worker/job-worker.js';
import { startAuthorizationServer } from '../support/authorization-server.js';
import { testDialects } from '../support/databases.js';
import { eventually, notificationTenant, verifyWebhook } from '../support/notifications.js';
import { startHttpReceiver, unusedPort, type RecordedRequest } from '../support/receivers.js';
import { api, startTestApp, type TestApp } from '../support/test-app.js';

/**
 * The delivery log records, per attempt, the headers the call carried (`requestHeaders`): a real
 * receiver on loopback gets the call, and the logged headers are compared with what it received,
 * masked values aside. The stored row is read from the table too: no secret is in it.
 */

/** What the HTTP client adds on its own: not part of the log (the attempt's url and the payload give them). */
const TRANSPORT = new Set(['host', 'content-length', 'connection']);

/** The receiver's headers as the log must show them: the signatures and the credential masked as "****" + last 4 (a Basic credential: "****"). */
function expectedLog(headers: IncomingHttpHeaders): Record<string, string> {
  const expected: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (TRANSPORT.has(name) || value === undefined) continue;
    const text = String(value);
    if (name === 'webhook-signature')
      expected[name] = text
        .split(' ')
        .map((signature) => `v1,****${signature.slice(-4)}`)
        .join(' ');
    else if (name === 'authorization') expected[name] = text.replace(/^(\w+) (.*)$/, (_all, scheme: string, credential: string) => `${scheme} ****${scheme === 'Basic' ? '' : credential.slice(-4)}`);
    else expected[name] = text;
  }
  return expected;
}

describe('maskRequestHeaders', () => {
  it('keeps every header but the secrets; each signature keeps its version, the credential its scheme', () => {
    const masked = maskRequestHeaders({
      'Content-Type': 'application/json',
      'webhook-signature': 'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4= v1,3fXWyKg2l0M1nZ0jWmM0o/5DE0cQxd6HfC9vA4ZlZ2A=',
      authorization: 'Bearer receiver-token-abcd1234',
      'x-tenant': 'acme',
    });
    assert.deepEqual(masked, {
      'content-type': 'application/json',
      'webhook-signature': 'v1,****pI4= v1,****Z2A=',
      authorization: 'Bearer ****1234',
      'x-tenant': 'acme',
    });
  });

  it('masks as the subscription API masks credentials: a short value shows no tail, an unexpected shape is masked whole', () => {
    assert.deepEqual(maskRequestHeaders({ authorization: 'Bearer abc123' }), { authorization: 'Bearer ****' });
    // The tail of a Basic credential is the end of the password, base64-encoded: none of it is kept.
    assert.deepEqual(maskRequestHeaders({ authorization: `Basic ${Buffer.from('alice:correct-horse-battery').toString('base64')}` }), { authorization: 'Basic ****' });
    assert.deepEqual(maskRequestHeaders({ authorization: 'sometokenwithoutscheme' }), { authorization: '****heme' });
    assert.deepEqual(maskRequestHeaders({ 'webhook-signature': 'unsigned-value-of-no-known-form' }), { 'webhook-signature': '****form' });
  });
});

for (const dialect of testDialects()) {
  describe(`the headers each attempt sent, in the delivery log [${dialect}]`, () => {
    let t: TestApp;
    let worker: JobWorker;

    before(async () => {
      t = await startTestApp(dialect, { RETRY_INTERVAL: '50ms', RETRY_MAX_ATTEMPTS: '1' });
      worker = startWorker(t.deps, { pollIntervalMs: 25 });
    });
    after(async () => {
      await worker.stop();
      await t.close();
    });

    const tenant = () => notificationTenant(t);

    /** The attempt rows as stored, every column as text. */
    const storedAttempts = async (notificationId: string) => JSON.stringify(await t.deps.db.selectFrom('notification_attempts').selectAll().where('notification_id', '=', notificationId).execute());

    const callOf = (requests: RecordedRequest[], notificationId: string) => requests.find((r) => r.headers['webhook-id'] === notificationId);

    it('Bearer, a custom header and two signatures during a rotation: the log holds what the receiver got, masked; no secret is stored', async () => {
      const { token, subscribe, send, ended } = await tenant();
      const receiver = await startHttpReceiver();
      try {
        const bearer = 'receiver-token-9Zq4xW2p7Lk3';
        const sub = await subscribe({ url: `${receiver.url}/hook`, authorization: { Bearer: bearer }, customHeaders: { 'X-Tenant': 'acme' } });
        const rotated = await api(t.url, 'POST', `/v2/subscriptions/${sub._id}/secret/rotate`, { token });
        assert.equal(rotated.status, 200, JSON.stringify(rotated.body));
        await sleep(1_100); // the worker caches signing secrets for a second
        const notification = await ended(await send());
        assert.equal(notification.status, 'succeeded');
        const call = callOf(receiver.requests, notification.id)!;
        verifyWebhook(sub.secret, call);
        verifyWebhook(rotated.body.secret, call);
        const signatures = String(call.headers['webhook-signature']).split(' ');
        assert.equal(signatures.length, 2, 'both secrets sign during the overlap');

        const [attempt] = notification.attempts;
        assert.deepEqual(attempt.requestHeaders, expectedLog(call.headers));
        assert.deepEqual(Object.keys(attempt.requestHeaders).sort(), [
          'authorization',
          'content-type',
          'user-agent',
          'webhook-id',
          'webhook-signature',
          'webhook-timestamp',
          'x-tenant',
          'x-webhook-event',
        ]);
        assert.equal(attempt.requestHeaders['webhook-id'], notification.id);
        assert.equal(attempt.requestHeaders.authorization, `Bearer ****${bearer.slice(-4)}`);
        assert.match(attempt.requestHeaders['webhook-signature'], /^v1,\*\*\*\*\S{4} v1,\*\*\*\*\S{4}$/);

        const stored = await storedAttempts(notification.id);
        for (const secret of [
          bearer,
          sub.secret,
          sub.secret.slice('whsec_'.length),
          rotated.body.secret,
          rotated.body.secret.slice('whsec_'.length),
          ...signatures,
          ...signatures.map((s) => s.slice(3)),
        ]) {
          assert.ok(!stored.includes(secret), `the stored attempt holds ${secret}`);
        }
        // Compact JSON: no space but inside values.
        const row = await t.deps.db.selectFrom('notification_attempts').select('request_headers').where('notification_id', '=', notification.id).executeTakeFirstOrThrow();
        assert.equal(row.request_headers, JSON.stringify(JSON.parse(row.request_headers!)));
      } finally {
        await receiver.close();
      }
    });

    it('Basic: the credential is masked whole; neither it nor any of the password is stored', async () => {
      const { subscribe, send, ended } = await tenant();
      const receiver = await startHttpReceiver();
      try {
        const credential = Buffer.from('alice:correct-horse-battery').toString('base64');
        await subscribe({ url: `${receiver.url}/basic`, authorization: { Basic: credential } });
        const notification = await ended(await send());
        const call = callOf(receiver.requests, notification.id)!;
        assert.equal(call.headers.authorization, `Basic ${credential}`);
        assert.deepEqual(notification.attempts[0].requestHeaders, expectedLog(call.headers));
        assert.equal(notification.attempts[0].requestHeaders.authorization, 'Basic ****');
        const stored = await storedAttempts(notification.id);
        for (const secret of [credential, credential.slice(-4), 'correct-horse-battery']) assert.ok(!stored.includes(secret), `the stored attempt holds ${secret}`);
      } finally {
        await receiver.close();
      }
    });

    it('OAuth2: the access token is masked; neither it nor the client secret is stored', async () => {
      const { subscribe, send, ended } = await tenant();
      const as = await startAuthorizationServer({ accessTokenTtlSeconds: 300 });
      const receiver = await startHttpReceiver();
      try {
        const oauth2 = { client_id: as.clientId, client_secret: as.clientSecret, url: as.tokenUrl, audience: as.audience };
        await subscribe({ url: `${receiver.url}/oauth2`, authorization: { oauth2 } });
        const notification = await ended(await send());
        assert.equal(notification.status, 'succeeded');
        const call = callOf(receiver.requests, notification.id)!;
        const accessToken = String(call.headers.authorization).replace(/^Bearer /, '');
        assert.ok(accessToken.length > 20);
        assert.deepEqual(notification.attempts[0].requestHeaders, expectedLog(call.headers));
        const stored = await storedAttempts(notification.id);
        for (const secret of [accessToken, as.clientSecret]) assert.ok(!stored.includes(secret), 'the stored attempt holds a secret');
      } finally {
        await receiver.close();
        await as.close();
      }
    });

    it('a token request that fails: the callback is not called and the attempt has no headers', async () => {
      const { subscribe, send, ended } = await tenant();
      const as = await startAuthorizationServer();
      const receiver = await startHttpReceiver();
      try {
        await subscribe({ url: `${receiver.url}/oauth2-bad`, authorization: { oauth2: { client_id: as.clientId, client_secret: 'not-the-secret-0123456789', url: as.tokenUrl } } });
        const notification = await ended(await send());
        assert.equal(notification.status, 'failed');
        assert.match(notification.attempts[0].error, /OAuth2 token request/);
        assert.equal(receiver.requests.length, 0);
        assert.equal(notification.attempts[0].requestHeaders, null);
      } finally {
        await receiver.close();
        await as.close();
      }
    });

    it('a call that could not connect logs the headers it was sending', async () => {
      const { subscribe, send, ended } = await tenant();
      const port = await unusedPort();
      await subscribe({ url: `http://127.0.0.1:${port}/nobody`, authorization: { Bearer: 'token-for-nobody-5555' } });
      const notification = await ended(await send());
      assert.equal(notification.status, 'failed');
      const [attempt] = notification.attempts;
      assert.match(attempt.error, /connection refused/);
      assert.equal(attempt.statusCode, null);
      assert.equal(attempt.requestHeaders['webhook-id'], notification.id);
      assert.equal(attempt.requestHeaders.authorization, 'Bearer ****5555');
      assert.match(attempt.requestHeaders['webhook-signature'], /^v1,\*\*\*\*\S{4}$/);
      assert.ok(Math.abs(Date.parse(attempt.at) / 1000 - Number(attempt.requestHeaders['webhook-timestamp'])) < 2, 'the timestamp of this attempt');
    });

    it('a test send: the log shows x-webhook-test as the receiver got it', async () => {
      const { token, subscribe } = await tenant();
      const receiver = await startHttpReceiver();
      try {
        const sub = await subscribe({ url: `${receiver.url}/test` });
        const sent = await api(t.url, 'POST', `/v2/subscriptions/${sub._id}/test`, { token });
        assert.equal(sent.status, 202, JSON.stringify(sent.body));
        const id = sent.body.notificationId as string;
        const detail = await eventually(
          async () => {
            const body = (await api(t.url, 'GET', `/v2/notifications/${id}`, { token })).body;
            return body.attempts.length === 1 && body;
          },
          15_000,
          'the test send',
        );
        const call = callOf(receiver.requests, id)!;
        assert.equal(call.headers['x-webhook-test'], 'true');
        assert.deepEqual(detail.attempts[0].requestHeaders, expectedLog(call.headers));
      } finally {
        await receiver.close();
      }
    });
  });
}
