// needs: database
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { decodeJwt } from 'jose';
import { startWorker } from '../../src/worker/start-worker.js';
import type { JobWorker } from '../../src/worker/job-worker.js';
import { startAuthorizationServer, type AuthorizationServer } from '../support/authorization-server.js';
import { testDialects } from '../support/databases.js';
import { eventually, notificationTenant, verifyWebhook } from '../support/notifications.js';
import { startHttpReceiver, startHttpsReceiver, type RecordedRequest, type Reply, type Responder } from '../support/receivers.js';
import { testPki, writePkiFiles, type TestPki } from '../support/test-pki.js';
import { api, startTestApp, type TestApp } from '../support/test-app.js';

/**
 * Each outbound authentication method end to end: a subscription created over HTTP with
 * `callback.authorization`, a request sent, the job worker delivering to a real receiver that
 * checks the credential (Basic header, a JWT verified against a real oidc-provider's JWKS, a client
 * certificate required by the TLS handshake). The delivery log never shows a secret.
 */

/** A receiver answer log: which requests the checker accepted. */
interface Checked {
  request: RecordedRequest;
  status: number;
}

/** Wraps a checker so every answer is recorded next to the request it answers. */
function checking(answers: Checked[], check: (request: RecordedRequest) => Reply | Promise<Reply>): Responder {
  return async (request) => {
    const reply = await check(request);
    answers.push({ request, status: reply.status });
    return reply;
  };
}

/** A resource server protected by `as`: 204 for a valid JWT with the AS's audience, else 401. */
function bearerFrom(as: AuthorizationServer, answers: Checked[]): Responder {
  return checking(answers, async (request) => {
    const token = /^Bearer (.+)$/.exec(String(request.headers.authorization ?? ''))?.[1];
    if (!token) return { status: 401, headers: { 'www-authenticate': 'Bearer' } };
    try {
      await as.verifyAccessToken(token);
      return { status: 204 };
    } catch {
      return { status: 401, headers: { 'www-authenticate': 'Bearer error="invalid_token"' } };
    }
  });
}

const bearerOf = (request: RecordedRequest) => String(request.headers.authorization).replace(/^Bearer /, '');

for (const dialect of testDialects()) {
  describe(`notification outbound authentication end to end [${dialect}]`, () => {
    let pki: TestPki;
    let t: TestApp;
    let worker: JobWorker;

    before(async () => {
      pki = await testPki();
      const files = writePkiFiles(pki);
      t = await startTestApp(dialect, {
        RETRY_INTERVAL: '50ms',
        RETRY_MAX_ATTEMPTS: '2',
        MTLS_CERT_FILE: files.certFile,
        MTLS_KEY_FILE: files.keyFile,
        MTLS_CA_FILE: files.caFile,
      });
      worker = startWorker(t.deps, { pollIntervalMs: 25 });
    });
    after(async () => {
      await worker.stop();
      await t.close();
    });

    /** A fresh account (notificationTenant) whose finished notification also comes with the delivery log's text, to search for secrets. */
    const tenant = async () => {
      const { token, subscribe, send, ended } = await notificationTenant(t);
      const settled = async (requestId: string) => {
        const detail = await ended(requestId);
        const list = await api(t.url, 'GET', `/v2/notifications?requestId=${requestId}`, { token });
        return { detail, text: JSON.stringify(detail) + JSON.stringify(list.body) };
      };
      const deleteSubscription = (id: string) => api(t.url, 'DELETE', `/v2/subscriptions/${id}`, { token });
      return { subscribe, send, settled, deleteSubscription };
    };

    const forRequest = (answers: Checked[], requestId: string) => answers.filter((a) => JSON.parse(a.request.body).id === requestId);

    it('Basic: the receiver gets the configured credential; a wrong one is refused and logged without the secret', async () => {
      const { subscribe, send, settled, deleteSubscription } = await tenant();
      const good = Buffer.from('alice:correct-horse-battery').toString('base64');
      const wrong = Buffer.from('alice:wrong-password-42').toString('base64');
      const answers: Checked[] = [];
      const receiver = await startHttpReceiver(
        checking(answers, (request) => (request.headers.authorization === `Basic ${good}` ? { status: 204 } : { status: 401, headers: { 'www-authenticate': 'Basic' } })),
      );
      try {
        const sub = await subscribe({ url: `${receiver.url}/basic`, authorization: { Basic: good } });
        const requestId = await send();
        const { detail, text } = await settled(requestId);
        assert.equal(detail.status, 'succeeded', JSON.stringify(detail));
        const [answer] = forRequest(answers, requestId);
        assert.equal(answer!.status, 204);
        assert.equal(answer!.request.headers.authorization, `Basic ${good}`);
        verifyWebhook(sub.secret, answer!.request);
        for (const secret of [good, 'correct-horse-battery']) assert.ok(!text.includes(secret), `the log shows ${secret}`);

        const refusedSub = await subscribe({ url: `${receiver.url}/basic-wrong`, authorization: { Basic: `Basic ${wrong}` } });
        await deleteSubscription(sub._id);
        const refusedId = await send();
        const refused = await settled(refusedId);
        assert.equal(refused.detail.status, 'failed');
        assert.deepEqual(
          refused.detail.attempts.map((a: any) => a.statusCode),
          [401, 401],
        );
        const sent = forRequest(answers, refusedId);
        assert.equal(sent.length, 2, 'every retry carries the credential again');
        assert.ok(
          sent.every((a) => a.request.headers.authorization === `Basic ${wrong}`),
          'a leading "Basic " is not doubled',
        );
        assert.ok(!refused.text.includes(wrong));
        await deleteSubscription(refusedSub._id);
      } finally {
        await receiver.close();
      }
    });

    it('OAuth2: one token request for N notifications, the JWT audience verified against the JWKS, no secret or token in the log', async () => {
      const { subscribe, send, settled, deleteSubscription } = await tenant();
      const as = await startAuthorizationServer({ accessTokenTtlSeconds: 300 });
      const answers: Checked[] = [];
      const receiver = await startHttpReceiver(bearerFrom(as, answers));
      try {
        const oauth2 = { client_id: as.clientId, client_secret: as.clientSecret, url: as.tokenUrl, audience: as.audience };
        const sub = await subscribe({ url: `${receiver.url}/oauth2`, authorization: { oauth2 } });
        const N = 6;
        const requestIds: string[] = [];
        for (let i = 0; i < N; i++) requestIds.push(await send());
        const logs = await Promise.all(requestIds.map((id) => settled(id)));
        assert.ok(
          logs.every((l) => l.detail.status === 'succeeded'),
          JSON.stringify(logs.map((l) => l.detail)),
        );
        assert.equal(answers.length, N, 'one call per notification, none refused and repeated');
        assert.ok(answers.every((a) => a.status === 204));

        assert.equal(as.tokenRequests.length, 1, `expected one token request for ${N} notifications`);
        const tokenRequest = as.tokenRequests[0]!;
        assert.equal(tokenRequest.status, 200);
        assert.equal(tokenRequest.params.grant_type, 'client_credentials');
        assert.equal(tokenRequest.params.audience, as.audience);
        const tokens = new Set(answers.map((a) => bearerOf(a.request)));
        assert.equal(tokens.size, 1, 'every notification reuses the cached token');
        const [accessToken] = tokens;
        const claims = await as.verifyAccessToken(accessToken!);
        assert.equal(claims.aud, as.audience);
        assert.equal(claims.client_id, as.clientId);
        for (const answer of answers) verifyWebhook(sub.secret, answer.request);
        for (const { text } of logs) {
          assert.ok(!text.includes(as.clientSecret), 'the log shows the client secret');
          assert.ok(!text.includes(accessToken!), 'the log shows the access token');
        }

        // A refused token request: the attempt fails with the OAuth2 error, the secret stays out of the log.
        await deleteSubscription(sub._id);
        const badSecret = 'definitely-not-the-secret-9f8e7d';
        const bad = await subscribe({ url: `${receiver.url}/oauth2-bad`, authorization: { oauth2: { ...oauth2, client_secret: badSecret } } });
        const failedId = await send();
        const failed = await settled(failedId);
        assert.equal(failed.detail.status, 'failed');
        assert.match(failed.detail.attempts[0].error, /^OAuth2 token request to http:\/\/127\.0\.0\.1:\d+\/token failed: HTTP 401/);
        assert.equal(forRequest(answers, failedId).length, 0, 'the callback is not called without a token');
        assert.ok(!failed.text.includes(badSecret));
        await deleteSubscription(bad._id);
      } finally {
        await receiver.close();
        await as.close();
      }
    });

    it('OAuth2: once the token has expired the next notification fetches a new one', async () => {
      const { subscribe, send, settled, deleteSubscription } = await tenant();
      const as = await startAuthorizationServer({ accessTokenTtlSeconds: 2 });
      const answers: Checked[] = [];
      const receiver = await startHttpReceiver(bearerFrom(as, answers));
      try {
        const oauth2 = { client_id: as.clientId, client_secret: as.clientSecret, url: as.tokenUrl, audience: as.audience };
        const sub = await subscribe({ url: `${receiver.url}/short-lived`, authorization: { oauth2 } });
        const first = await send();
        assert.equal((await settled(first)).detail.status, 'succeeded');
        assert.equal(as.tokenRequests.length, 1);
        const firstToken = bearerOf(forRequest(answers, first)[0]!.request);
        // Wait (no assertion on time) until the token has expired, plus the second `exp` is rounded to.
        const expiresAt = decodeJwt(firstToken).exp! * 1000;
        await eventually(() => Date.now() > expiresAt + 1000, 10_000, 'token expiry');

        const second = await send();
        assert.equal((await settled(second)).detail.status, 'succeeded');
        assert.equal(as.tokenRequests.length, 2, 'exactly one new token request');
        const secondCalls = forRequest(answers, second);
        assert.equal(secondCalls.length, 1, 'the new token was fetched before the call, not after a 401');
        assert.equal(secondCalls[0]!.status, 204);
        const secondToken = bearerOf(secondCalls[0]!.request);
        assert.notEqual(secondToken, firstToken);
        // The receiver verified it when it arrived (the 204); its 2 s lifetime may be over by now.
        assert.equal(decodeJwt(secondToken).aud, as.audience);
        await deleteSubscription(sub._id);
      } finally {
        await receiver.close();
        await as.close();
      }
    });

    it('mTLS: the service certificate is presented to an HTTPS receiver that requires it; without mtls the handshake fails', async () => {
      const { subscribe, send, settled, deleteSubscription } = await tenant();
      const receiver = await startHttpsReceiver({ key: pki.server.key, cert: pki.server.cert, ca: pki.ca.cert, requireClientCertificate: true });
      try {
        const sub = await subscribe({ url: `${receiver.url}/mtls`, authorization: { mtls: {} } });
        const requestId = await send();
        const { detail } = await settled(requestId);
        assert.equal(detail.status, 'succeeded', JSON.stringify(detail));
        const call = receiver.requests.find((r) => JSON.parse(r.body).id === requestId)!;
        assert.equal(call.clientCertificateCN, pki.clientCommonName);
        assert.equal(call.headers.authorization, undefined, 'mTLS alone sends no Authorization header');
        verifyWebhook(sub.secret, call);
        await deleteSubscription(sub._id);

        // The same receiver without `mtls`: the service does not reveal its certificate, the handshake is refused.
        const plain = await subscribe({ url: `${receiver.url}/no-mtls` });
        const refusedId = await send();
        const refused = await settled(refusedId);
        assert.equal(refused.detail.status, 'failed');
        assert.ok(
          refused.detail.attempts.every((a: any) => a.statusCode === null && typeof a.error === 'string'),
          JSON.stringify(refused.detail.attempts),
        );
        assert.ok(!receiver.requests.some((r) => JSON.parse(r.body).id === refusedId));
        assert.ok(!refused.text.includes('PRIVATE KEY'));
        await deleteSubscription(plain._id);
      } finally {
        await receiver.close();
      }
    });

    it('mTLS + OAuth2: the token endpoint and the callback both require the client certificate', async () => {
      const { subscribe, send, settled, deleteSubscription } = await tenant();
      const tls = { key: pki.server.key, cert: pki.server.cert, ca: pki.ca.cert, requireClientCertificate: true };
      const as = await startAuthorizationServer({ tls });
      const answers: Checked[] = [];
      const receiver = await startHttpsReceiver(tls, bearerFrom(as, answers));
      try {
        const oauth2 = { client_id: as.clientId, client_secret: as.clientSecret, url: as.tokenUrl, audience: as.audience };
        const sub = await subscribe({ url: `${receiver.url}/two-factor`, authorization: { mtls: { twoFactor: { oauth2 } } } });
        const requestIds = [await send(), await send(), await send()];
        const logs = await Promise.all(requestIds.map((id) => settled(id)));
        assert.ok(
          logs.every((l) => l.detail.status === 'succeeded'),
          JSON.stringify(logs.map((l) => l.detail)),
        );
        assert.equal(as.tokenRequests.length, 1);
        assert.equal(as.tokenRequests[0]!.status, 200);
        assert.equal(as.tokenRequests[0]!.clientCertificateCN, pki.clientCommonName, 'the token request presented the certificate');
        assert.equal(answers.length, 3);
        for (const answer of answers) {
          assert.equal(answer.status, 204);
          assert.equal(answer.request.clientCertificateCN, pki.clientCommonName);
          assert.equal((await as.verifyAccessToken(bearerOf(answer.request))).aud, as.audience);
          verifyWebhook(sub.secret, answer.request);
        }
        const accessToken = bearerOf(answers[0]!.request);
        for (const { text } of logs) {
          assert.ok(!text.includes(as.clientSecret));
          assert.ok(!text.includes(accessToken));
        }
        await deleteSubscription(sub._id);
      } finally {
        await receiver.close();
        await as.close();
      }
    });
  });
}
