// needs: every-node-line
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { CONFIG_VARIABLES, loadConfig, type OutboundProxy } from '../../src/config.js';
import { GuardedResolver } from '../../src/net/address-policy.js';
import { createOutbound, type Outbound, type OutboundConfig } from '../../src/worker/outbound/create-outbound.js';
import type { DeliveryAttemptInput } from '../../src/worker/outbound/deliver.js';
import { bypassMatcher, createProxyConnector } from '../../src/worker/outbound/proxy-connector.js';
import { startAuthorizationServer, type AuthorizationServer } from '../support/authorization-server.js';
import { eventually } from '../support/notifications.js';
import { startHttpReceiver, startHttpsReceiver, unusedPort, type Receiver } from '../support/receivers.js';
import { testPki, writePkiFiles, type TestPki } from '../support/test-pki.js';
import { startTinyproxy, tinyproxySkipReason, type Tinyproxy } from '../support/tinyproxy.js';

/**
 * OUTBOUND_PROXY (src/worker/outbound/proxy-connector.ts) against a real tinyproxy on loopback:
 * callback calls and OAuth2 token requests go through it by CONNECT to the address the service
 * vetted, TLS and mTLS run over the tunnel with the URL's host name, the bypass list goes direct,
 * a forbidden address never reaches the proxy, and the proxy's own failures read clearly. The same
 * through the worker, its outbound thread and the delivery log, on both databases:
 * egress-proxy-delivery.test.ts.
 */

const secret = `whsec_${randomBytes(32).toString('base64')}`;
let sequence = 0;
const input = (url: string, extra: Partial<DeliveryAttemptInput> = {}): DeliveryAttemptInput => ({
  accountId: 'acc_proxy',
  url,
  body: JSON.stringify({ id: `req_proxy_${++sequence}` }),
  eventType: 'registered-requests',
  msgId: `ntf_proxy_${sequence}`,
  secrets: [secret],
  ...extra,
});
const baseConfig: OutboundConfig = { callbackTimeoutMs: 3000, callbackAllowPrivateNetworks: true, mtlsCertFile: undefined, mtlsKeyFile: undefined, mtlsCaFile: undefined };
const proxyAt = (proxy: Tinyproxy, credentials?: { user: string; password: string }): OutboundProxy => ({
  host: '127.0.0.1',
  port: proxy.port,
  ...(credentials ? { username: credentials.user, password: credentials.password } : {}),
});

describe('the egress proxy settings', () => {
  it('OUTBOUND_PROXY is http://[user:password@]host:port; anything else refuses to start, naming it', () => {
    const config = loadConfig({ OUTBOUND_PROXY: 'http://egress%40corp:p%3Ass@proxy.internal:3128' });
    assert.deepEqual(config.outboundProxy, { host: 'proxy.internal', port: 3128, username: 'egress@corp', password: 'p:ss' });
    assert.deepEqual(loadConfig({ OUTBOUND_PROXY: 'http://[fd00::1]:8080/' }).outboundProxy, { host: 'fd00::1', port: 8080 });
    assert.equal(loadConfig({}).outboundProxy, undefined);
    for (const [bad, why] of [
      ['socks5://127.0.0.1:1080', /OUTBOUND_PROXY: expected http:\/\/\[user:password@\]host:port .*socks5:\/\/ proxies are not supported/],
      ['https://proxy:3128', /https:\/\/ proxies are not supported/],
      ['http://proxy', /with its port and no path/],
      ['http://proxy:3128/path', /with its port and no path/],
      ['proxy:3128', /OUTBOUND_PROXY: expected/],
    ] as const) {
      assert.throws(() => loadConfig({ OUTBOUND_PROXY: bad }), why, bad);
    }
  });

  it('OUTBOUND_PROXY_BYPASS takes names, .domains, addresses and CIDR blocks, and needs OUTBOUND_PROXY', () => {
    const config = loadConfig({ OUTBOUND_PROXY: 'http://127.0.0.1:3128', OUTBOUND_PROXY_BYPASS: 'Hooks.Example.com., .internal.example, 10.0.0.0/8, 192.0.2.7, fd00::/8, [::1]' });
    assert.deepEqual(config.outboundProxyBypass, ['hooks.example.com', '.internal.example', '10.0.0.0/8', '192.0.2.7', 'fd00::/8', '::1']);
    for (const bad of ['*.example.com', 'hooks.example.com:443', '10.0.0.0/33', 'http://hooks.example.com']) {
      assert.throws(() => loadConfig({ OUTBOUND_PROXY: 'http://127.0.0.1:3128', OUTBOUND_PROXY_BYPASS: bad }), /OUTBOUND_PROXY_BYPASS: expected comma-separated host names/, bad);
    }
    assert.throws(() => loadConfig({ OUTBOUND_PROXY_BYPASS: '10.0.0.0/8' }), /OUTBOUND_PROXY_BYPASS: lists what bypasses OUTBOUND_PROXY, which is not set/);
  });

  it('OUTBOUND_SOURCE_ADDRESSES takes addresses and CIDR blocks, with or without a proxy', () => {
    assert.deepEqual(loadConfig({ OUTBOUND_SOURCE_ADDRESSES: '203.0.113.7, 203.0.113.8,2001:db8::/48' }).outboundSourceAddresses, ['203.0.113.7', '203.0.113.8', '2001:db8::/48']);
    assert.deepEqual(loadConfig({}).outboundSourceAddresses, []);
    assert.throws(
      () => loadConfig({ OUTBOUND_SOURCE_ADDRESSES: '203.0.113.7,proxy.example.com' }),
      /OUTBOUND_SOURCE_ADDRESSES: expected comma-separated IP addresses or CIDR blocks .*"proxy\.example\.com"/,
    );
  });

  it('rewards config show masks the proxy credentials', () => {
    const config = loadConfig({ OUTBOUND_PROXY: 'http://egress-user:egress-password@127.0.0.1:3128', OUTBOUND_PROXY_BYPASS: '.internal', OUTBOUND_SOURCE_ADDRESSES: '203.0.113.7' });
    const shown = Object.fromEntries(Object.entries(CONFIG_VARIABLES).map(([name, format]) => [name, format(config)]));
    assert.equal(shown.OUTBOUND_PROXY, 'http://****:****@127.0.0.1:3128');
    assert.equal(shown.OUTBOUND_PROXY_BYPASS, '.internal');
    assert.equal(shown.OUTBOUND_SOURCE_ADDRESSES, '203.0.113.7');
    assert.ok(!JSON.stringify(shown).includes('egress-'), 'no credential shown');
    assert.equal(CONFIG_VARIABLES.OUTBOUND_PROXY!(loadConfig({ OUTBOUND_PROXY: 'http://127.0.0.1:3128' })), 'http://127.0.0.1:3128');
  });

  it('the bypass matches exact names, subdomains of a .domain, and the resolved address by block', () => {
    const bypasses = bypassMatcher(['hooks.example.com', '.internal.example', '10.0.0.0/8', '2001:db8::1']);
    assert.equal(bypasses('hooks.example.com', '93.184.216.34'), true);
    assert.equal(bypasses('HOOKS.example.com.', '93.184.216.34'), true);
    assert.equal(bypasses('other.example.com', '93.184.216.34'), false);
    assert.equal(bypasses('a.b.internal.example', '93.184.216.34'), true);
    assert.equal(bypasses('internal.example', '93.184.216.34'), false, '.domain is its subdomains only');
    assert.equal(bypasses('notinternal.example', '93.184.216.34'), false);
    assert.equal(bypasses('anything.example.org', '10.20.30.40'), true);
    assert.equal(bypasses('anything.example.org', '11.0.0.1'), false);
    assert.equal(bypasses('[2001:db8::1]', '2001:db8::1'), true);
  });
});

describe('outbound calls through the egress proxy (tinyproxy)', { skip: tinyproxySkipReason() }, () => {
  let pki: TestPki;
  let files: ReturnType<typeof writePkiFiles>;
  let proxy: Tinyproxy;
  let receiver: Receiver;
  let bypassed: Receiver;
  let tlsReceiver: Receiver;
  let mtlsReceiver: Receiver;
  let as: AuthorizationServer;
  /** Through the proxy, 127.0.0.2 and `bypass.localhost`-style names bypassing it; trusts the test CA and holds the service certificate. */
  let outbound: Outbound;
  const opened: Outbound[] = [];
  const open = (config: Partial<OutboundConfig>) => {
    const created = createOutbound({ ...baseConfig, ...config });
    opened.push(created);
    return created;
  };

  before(async () => {
    pki = await testPki();
    files = writePkiFiles(pki);
    [proxy, receiver, bypassed, tlsReceiver, mtlsReceiver, as] = await Promise.all([
      startTinyproxy(),
      startHttpReceiver(),
      startHttpReceiver(undefined, '127.0.0.2'),
      startHttpsReceiver({ key: pki.server.key, cert: pki.server.cert }),
      startHttpsReceiver({ key: pki.server.key, cert: pki.server.cert, ca: pki.ca.cert, requireClientCertificate: true }),
      startAuthorizationServer({ accessTokenTtlSeconds: 300 }),
    ]);
    outbound = open({
      mtlsCertFile: files.certFile,
      mtlsKeyFile: files.keyFile,
      mtlsCaFile: files.caFile,
      outboundProxy: proxyAt(proxy),
      outboundProxyBypass: ['127.0.0.2'],
    });
  });
  after(async () => {
    await Promise.all(opened.map((o) => o.close()));
    await Promise.all([receiver, bypassed, tlsReceiver, mtlsReceiver].map((r) => r.close()));
    await as.close();
    await proxy.close();
  });

  const connectsSince = (before: number) => proxy.connects().slice(before);

  it('an http callback named by host name goes through CONNECT to its vetted address; Host is the URL host', async () => {
    const before = proxy.connects().length;
    const result = await outbound.deliverAttempt(input(`http://localhost:${receiver.port}/hook`, { authorization: { Bearer: 'tok-http' } }));
    assert.equal(result.ok, true, result.error);
    const seen = receiver.requests.at(-1)!;
    assert.equal(seen.headers.host, `localhost:${receiver.port}`);
    assert.equal(seen.headers.authorization, 'Bearer tok-http');
    assert.equal(seen.headers['proxy-authorization'], undefined);
    const connects = await eventually(() => connectsSince(before).length > 0 && connectsSince(before), 3000, 'the CONNECT in the proxy log');
    // The proxy was asked for the address the service resolved and vetted, never for the name.
    assert.ok(
      connects.every((target) => /^(127\.0\.0\.1|\[::1\]):\d+$/.test(target)),
      connects.join(),
    );
    assert.ok(connects.includes(`127.0.0.1:${receiver.port}`) || connects.includes(`[::1]:${receiver.port}`));
  });

  it('https through the tunnel: SNI and the certificate check use the URL host name; an untrusted certificate still fails', async () => {
    const before = proxy.connects().length;
    for (const url of [`https://localhost:${tlsReceiver.port}/tls`, `${tlsReceiver.url}/by-address`]) {
      const result = await outbound.deliverAttempt(input(url));
      assert.equal(result.ok, true, `${url}: ${result.error}`);
    }
    assert.deepEqual(
      tlsReceiver.requests.slice(-2).map((r) => r.headers.host),
      [`localhost:${tlsReceiver.port}`, `127.0.0.1:${tlsReceiver.port}`],
    );
    await eventually(() => connectsSince(before).filter((t) => t.endsWith(`:${tlsReceiver.port}`)).length === 2, 3000, 'two CONNECTs');

    const untrusted = open({ outboundProxy: proxyAt(proxy) });
    const refused = await untrusted.deliverAttempt(input(`https://localhost:${tlsReceiver.port}/untrusted`));
    assert.equal(refused.ok, false);
    assert.match(refused.error!, /TLS handshake with localhost:\d+ failed: .*(CERT|VERIFY)/);
  });

  it('mTLS through the tunnel presents the service certificate; Basic goes with it', async () => {
    const basic = Buffer.from('alice:through-the-tunnel').toString('base64');
    const result = await outbound.deliverAttempt(input(`https://localhost:${mtlsReceiver.port}/mtls`, { authorization: { mtls: {}, Basic: basic } }));
    assert.equal(result.ok, true, result.error);
    const seen = mtlsReceiver.requests.at(-1)!;
    assert.equal(seen.clientCertificateCN, pki.clientCommonName);
    assert.equal(seen.headers.authorization, `Basic ${basic}`);
    // Without the certificate the receiver's handshake refuses, through the tunnel as directly.
    const without = await outbound.deliverAttempt(input(`https://localhost:${mtlsReceiver.port}/mtls`, { authorization: { Bearer: 'x' } }));
    assert.equal(without.ok, false);
  });

  it('the OAuth2 token request goes through the proxy too', async () => {
    const tokenPort = new URL(as.tokenUrl).port;
    const before = proxy.connects().length;
    const oauth2 = { client_id: as.clientId, client_secret: as.clientSecret, url: as.tokenUrl, audience: as.audience };
    const result = await outbound.deliverAttempt(input(`${receiver.url}/oauth2`, { authorization: { oauth2 } }));
    assert.equal(result.ok, true, result.error);
    const token = String(receiver.requests.at(-1)!.headers.authorization).replace(/^Bearer /, '');
    await as.verifyAccessToken(token);
    await eventually(() => connectsSince(before).includes(`127.0.0.1:${tokenPort}`), 3000, 'the token request in the proxy log');
  });

  it('a bypassed destination (here by address) is called directly', async () => {
    const before = proxy.connects().length;
    const direct = await outbound.deliverAttempt(input(`${bypassed.url}/direct`));
    assert.equal(direct.ok, true, direct.error);
    const byName = open({ outboundProxy: proxyAt(proxy), outboundProxyBypass: ['localhost'] });
    const named = await byName.deliverAttempt(input(`http://localhost:${receiver.port}/named`));
    assert.equal(named.ok, true, named.error);
    // A call through the proxy after them (a new pool, so a new tunnel), so its log line shows they left none.
    const proxied = await open({ outboundProxy: proxyAt(proxy) }).deliverAttempt(input(`${receiver.url}/after`));
    assert.equal(proxied.ok, true, proxied.error);
    await eventually(() => connectsSince(before).length > 0, 3000, 'the last CONNECT');
    assert.deepEqual(connectsSince(before), [`127.0.0.1:${receiver.port}`]);
  });

  it('a forbidden address is refused before any call to the proxy, by name and by address', async () => {
    const guarded = open({ callbackAllowPrivateNetworks: false, outboundProxy: proxyAt(proxy) });
    const connections = proxy.connections();
    for (const url of [`http://localhost:${receiver.port}/private`, `http://127.0.0.1:${receiver.port}/private`]) {
      const result = await guarded.deliverAttempt(input(url));
      assert.equal(result.ok, false);
      assert.match(result.error!, /^refused to connect: (localhost resolves to \S+,|127\.0\.0\.1 is) a loopback, private, link-local or reserved address/);
    }
    // The connector on its own: its resolver refuses what `localhost` resolves to, and the proxy hears nothing.
    const connector = createProxyConnector({ proxy: proxyAt(proxy), bypass: [], resolver: new GuardedResolver(false), timeoutMs: 1000, tls: {} });
    const error = await new Promise<Error | null>((resolve) => connector({ hostname: 'localhost', protocol: 'http:', port: String(receiver.port) }, (...outcome) => resolve(outcome[0])));
    assert.equal((error as { code?: string } | null)?.code, 'ERR_CALLBACK_ADDRESS_FORBIDDEN');
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(proxy.connections(), connections, 'no connection reached the proxy');
  });

  it('a proxy that refuses CONNECT, wants credentials, is down or silent: a clear failure, no secret in it', async () => {
    const refusing = await startTinyproxy({ connectPorts: [1] });
    const locked = await startTinyproxy({ basicAuth: { user: 'egress-user', password: 'egress-password' } });
    // Accepts and never answers; reads, so it sees the service hang up.
    const silent: Server = createServer((socket: Socket) => socket.on('error', () => {}).resume());
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const silentPort = (silent.address() as { port: number }).port;
    try {
      const refused = await open({ outboundProxy: proxyAt(refusing) }).deliverAttempt(input(`${receiver.url}/refused`));
      assert.equal(refused.error, `the egress proxy 127.0.0.1:${refusing.port} refused CONNECT to 127.0.0.1:${receiver.port}: 403 Forbidden (Access violation)`);

      const anonymous = await open({ outboundProxy: proxyAt(locked) }).deliverAttempt(input(`${receiver.url}/anonymous`));
      assert.match(
        anonymous.error!,
        new RegExp(`^the egress proxy 127\\.0\\.0\\.1:${locked.port} refused CONNECT to 127\\.0\\.0\\.1:${receiver.port}: 407 Proxy Authentication Required; it wants credentials`),
      );
      const wrong = await open({ outboundProxy: proxyAt(locked, { user: 'egress-user', password: 'wrong-password' }) }).deliverAttempt(input(`${receiver.url}/wrong`));
      // tinyproxy answers wrong credentials with 401, not 407.
      assert.match(wrong.error!, new RegExp(`^the egress proxy 127\\.0\\.0\\.1:${locked.port} refused CONNECT to .*: 40[17] .*; check the user and password of OUTBOUND_PROXY$`));
      assert.ok(!wrong.error!.includes('wrong-password') && !wrong.error!.includes('egress-user'));
      const before = receiver.requests.length;
      const authenticated = await open({ outboundProxy: proxyAt(locked, { user: 'egress-user', password: 'egress-password' }) }).deliverAttempt(input(`${receiver.url}/authenticated`));
      assert.equal(authenticated.ok, true, authenticated.error);
      assert.equal(receiver.requests.length, before + 1);
      assert.equal(receiver.requests.at(-1)!.headers['proxy-authorization'], undefined, 'the proxy credentials stay with the proxy');

      const downPort = await unusedPort();
      const down = await open({ outboundProxy: { host: '127.0.0.1', port: downPort } }).deliverAttempt(input(`${receiver.url}/down`));
      assert.equal(down.error, `the egress proxy 127.0.0.1:${downPort} could not be reached: connection refused`);

      // CALLBACK_TIMEOUT covers the proxy's connect and the CONNECT exchange.
      const started = Date.now();
      const hung = await open({ callbackTimeoutMs: 300, outboundProxy: { host: '127.0.0.1', port: silentPort } }).deliverAttempt(input(`${receiver.url}/silent`));
      assert.match(hung.error!, /^timed out after 300 ms/);
      assert.ok(Date.now() - started < 2000);
    } finally {
      await Promise.all([refusing.close(), locked.close(), new Promise((resolve) => silent.close(resolve))]);
    }
  });
});
