// needs: database
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startWorker } from '../../src/worker/start-worker.js';
import type { JobWorker } from '../../src/worker/job-worker.js';
import { startAuthorizationServer, type AuthorizationServer } from '../support/authorization-server.js';
import { testDialects } from '../support/databases.js';
import { eventually, notificationTenant, verifyWebhook } from '../support/notifications.js';
import { startHttpReceiver, startHttpsReceiver, type Receiver, type Responder } from '../support/receivers.js';
import { testPki, writePkiFiles, type TestPki } from '../support/test-pki.js';
import { api, startTestApp, type TestApp } from '../support/test-app.js';
import { startTinyproxy, tinyproxySkipReason, type Tinyproxy } from '../support/tinyproxy.js';

/**
 * Deliveries through the egress proxy end to end (OUTBOUND_PROXY, docs/delivery.md "Egress
 * proxy"): the service and its worker (outbound thread included) configured with a real tinyproxy
 * on loopback, subscriptions created over HTTP, the proxy's own log read for the CONNECTs it was
 * asked for. Each authentication method works through the tunnel; the bypass list goes direct; a
 * proxy that refuses or is down fails attempts with a clear error in the delivery log, retried and
 * delivered once it is back. The rules one by one, without a database: egress-proxy.test.ts.
 */

const SOURCE_ADDRESSES = ['203.0.113.7', '203.0.113.8'];

/** A receiver that answers 204 only to `authorization`, 401 otherwise. */
const expecting =
  (authorization: string): Responder =>
  (request) =>
    request.headers.authorization === authorization ? { status: 204 } : { status: 401 };

for (const dialect of testDialects()) {
  describe(`deliveries through the egress proxy [${dialect}]`, { skip: tinyproxySkipReason() }, () => {
    let pki: TestPki;
    let proxy: Tinyproxy;
    let as: AuthorizationServer;
    let t: TestApp;
    let worker: JobWorker;
    const receivers: Receiver[] = [];
    const receiver = async (responder?: Responder, host?: string) => {
      const started = await startHttpReceiver(responder, host);
      receivers.push(started);
      return started;
    };

    before(async () => {
      pki = await testPki();
      const files = writePkiFiles(pki);
      [proxy, as] = await Promise.all([startTinyproxy(), startAuthorizationServer({ accessTokenTtlSeconds: 300 })]);
      t = await startTestApp(dialect, {
        RETRY_INTERVAL: '100ms',
        RETRY_MAX_ATTEMPTS: '30',
        CALLBACK_TIMEOUT: '3s',
        MTLS_CERT_FILE: files.certFile,
        MTLS_KEY_FILE: files.keyFile,
        MTLS_CA_FILE: files.caFile,
        OUTBOUND_PROXY: proxy.url(),
        OUTBOUND_PROXY_BYPASS: '127.0.0.2',
        OUTBOUND_SOURCE_ADDRESSES: SOURCE_ADDRESSES.join(','),
        // On, and as quick as it goes: a failure at the proxy must not count against the endpoint.
        CIRCUIT_BREAKER_FAILURES: '1',
        CIRCUIT_BREAKER_PROBE_INTERVAL: '50ms',
        CIRCUIT_BREAKER_PROBE_MAX_INTERVAL: '200ms',
      });
      worker = startWorker(t.deps, { pollIntervalMs: 25 });
    });
    after(async () => {
      await worker?.stop();
      await t?.close();
      await Promise.all(receivers.map((r) => r.close()));
      await as?.close();
      await proxy?.close();
    });

    /** The proxy was asked to CONNECT to `port` on the loopback address the service resolved, never by name. */
    const tunnelledTo = (port: number | string) => eventually(() => proxy.connects().some((target) => target === `127.0.0.1:${port}` || target === `[::1]:${port}`), 3000, `a CONNECT to port ${port}`);

    /** The attempts of the request's one notification so far. */
    const attemptsOf = async (token: string, requestId: string) => {
      const [listed] = (await api(t.url, 'GET', `/v2/notifications?requestId=${requestId}`, { token })).body.data;
      if (!listed) return [];
      return (await api(t.url, 'GET', `/v2/notifications/${listed.id}`, { token })).body.attempts as Array<{ error: string | null; statusCode: number | null }>;
    };

    it('a delivery goes through CONNECT to the vetted address, Bearer through the tunnel; integrators read the source addresses', async () => {
      const { token, subscribe, send, ended } = await notificationTenant(t);
      const target = await receiver(expecting('Bearer tunnelled-token'));
      const sub = await subscribe({ url: `http://localhost:${target.port}/bearer`, authorization: { Bearer: 'tunnelled-token' } });
      const detail = await ended(await send());
      assert.equal(detail.status, 'succeeded', JSON.stringify(detail.attempts));
      const [seen] = target.requests;
      assert.equal(seen!.headers.host, `localhost:${target.port}`, 'Host is the URL host');
      verifyWebhook(sub.secret, seen!);
      await tunnelledTo(target.port);
      assert.ok(!proxy.connects().some((connect) => connect.startsWith('localhost')), 'the proxy is never given the name to resolve');

      const policy = await api(t.url, 'GET', '/v2/delivery-policy', { token });
      assert.deepEqual(policy.body.sourceAddresses, SOURCE_ADDRESSES);
      assert.ok(!JSON.stringify(policy.body).includes(String(proxy.port)), 'the proxy itself is not shown');
    });

    it('Basic through the tunnel', async () => {
      const { subscribe, send, ended } = await notificationTenant(t);
      const basic = Buffer.from('alice:behind-the-proxy').toString('base64');
      const target = await receiver(expecting(`Basic ${basic}`));
      await subscribe({ url: `${target.url}/basic`, authorization: { Basic: basic } });
      const detail = await ended(await send());
      assert.equal(detail.status, 'succeeded', JSON.stringify(detail.attempts));
      await tunnelledTo(target.port);
    });

    it('OAuth2: the token request goes through the proxy too, and the token works through the tunnel', async () => {
      const { subscribe, send, ended } = await notificationTenant(t);
      const target = await receiver(async (request) => {
        const token = String(request.headers.authorization ?? '').replace(/^Bearer /, '');
        return as.verifyAccessToken(token).then(
          () => ({ status: 204 }),
          () => ({ status: 401 }),
        );
      });
      await subscribe({ url: `${target.url}/oauth2`, authorization: { oauth2: { client_id: as.clientId, client_secret: as.clientSecret, url: as.tokenUrl, audience: as.audience } } });
      const detail = await ended(await send());
      assert.equal(detail.status, 'succeeded', JSON.stringify(detail.attempts));
      assert.equal(as.tokenRequests.at(-1)!.status, 200);
      await tunnelledTo(new URL(as.tokenUrl).port);
      await tunnelledTo(target.port);
    });

    it('mTLS through the tunnel: TLS with the URL host name over the tunnelled socket, the service certificate presented', async () => {
      const { subscribe, send, ended } = await notificationTenant(t);
      const target = await startHttpsReceiver({ key: pki.server.key, cert: pki.server.cert, ca: pki.ca.cert, requireClientCertificate: true });
      receivers.push(target);
      await subscribe({ url: `https://localhost:${target.port}/mtls`, authorization: { mtls: {}, Bearer: 'with-a-certificate' } });
      const detail = await ended(await send());
      assert.equal(detail.status, 'succeeded', JSON.stringify(detail.attempts));
      assert.equal(target.requests[0]!.clientCertificateCN, pki.clientCommonName);
      assert.equal(target.requests[0]!.headers.authorization, 'Bearer with-a-certificate');
      await tunnelledTo(target.port);
    });

    it('a destination in OUTBOUND_PROXY_BYPASS is called directly', async () => {
      const { subscribe, send, ended } = await notificationTenant(t);
      const direct = await receiver(undefined, '127.0.0.2');
      await subscribe({ url: `${direct.url}/direct` });
      const detail = await ended(await send());
      assert.equal(detail.status, 'succeeded', JSON.stringify(detail.attempts));
      assert.equal(direct.requests.length, 1);
      assert.ok(!proxy.connects().some((target) => target.startsWith('127.0.0.2')), proxy.connects().join());
    });

    /** A proxy that fails the first attempts (`break`), then is mended: the notification is retried and delivered, its log saying why the attempts failed. */
    const failsThenDelivers = async (broken: () => Promise<void>, mended: () => Promise<void>, error: (receiverPort: number) => string) => {
      const { token, subscribe, send, ended } = await notificationTenant(t);
      // A receiver of its own: no pooled tunnel to it exists.
      const target = await receiver();
      await subscribe({ url: `${target.url}/later` });
      await broken();
      let requestId: string;
      try {
        requestId = await send();
        await eventually(async () => (await attemptsOf(token, requestId)).length >= 1, 10_000, 'a failed attempt');
        // The proxy failed, not the endpoint: its circuit breaker counted nothing (docs/delivery.md, "Circuit breaker").
        const circuits = await t.deps.db.selectFrom('endpoint_circuits').select('state').where('url', '=', `${target.url}/later`).execute();
        assert.deepEqual(circuits, []);
      } finally {
        await mended();
      }
      const detail = await ended(requestId);
      assert.equal(detail.status, 'succeeded', JSON.stringify(detail.attempts));
      const attempts = detail.attempts as Array<{ error: string | null; statusCode: number | null }>;
      assert.ok(attempts.length >= 2);
      assert.deepEqual({ error: attempts[0]!.error, statusCode: attempts[0]!.statusCode }, { error: error(target.port), statusCode: null });
      // An attempt made while the proxy was being restarted may have met it stopping or not yet listening.
      for (const failed of attempts.slice(1, -1)) assert.match(failed.error ?? '', new RegExp(`^the egress proxy 127\\.0\\.0\\.1:${proxy.port} `));
      assert.equal(attempts.at(-1)!.statusCode, 204);
      assert.equal(target.requests.length, 1, 'nothing reached the receiver before the proxy was back');
    };

    it('a proxy that refuses CONNECT fails the attempt with its answer; retried, it is delivered once the proxy allows it', async () => {
      await failsThenDelivers(
        async () => {
          await proxy.stop();
          await proxy.start({ connectPorts: [1] });
        },
        async () => {
          await proxy.stop();
          await proxy.start({});
        },
        (port) => `the egress proxy 127.0.0.1:${proxy.port} refused CONNECT to 127.0.0.1:${port}: 403 Forbidden (Access violation)`,
      );
    });

    it('a proxy that is down fails the attempt, saying so; retried, it is delivered once the proxy is back', async () => {
      await failsThenDelivers(
        () => proxy.stop(),
        () => proxy.start(),
        () => `the egress proxy 127.0.0.1:${proxy.port} could not be reached: connection refused`,
      );
    });
  });
}
