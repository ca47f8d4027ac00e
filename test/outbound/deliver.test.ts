// needs: every-node-line
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { createOutbound, type Outbound, type OutboundConfig } from '../../src/worker/outbound/create-outbound.js';
import type { DeliveryAttemptInput } from '../../src/worker/outbound/deliver.js';
import { eventually } from '../support/notifications.js';
import { gate, startHttpReceiver, unusedPort, type Receiver } from '../support/receivers.js';

const config = (overrides: Partial<OutboundConfig> = {}): OutboundConfig => ({
  callbackTimeoutMs: 5000,
  callbackAllowPrivateNetworks: true,
  mtlsCertFile: undefined,
  mtlsKeyFile: undefined,
  mtlsCaFile: undefined,
  ...overrides,
});

const secret = `whsec_${randomBytes(32).toString('base64')}`;
// Unusual spacing, key order and non-ASCII: the receiver must get these exact bytes.
const body = '{"id":"req_1",  "rewardValue":30,"message":"prêmio ✓","nested":{"b":1,"a":2}}';
const input = (url: string, extra: Partial<DeliveryAttemptInput> = {}): DeliveryAttemptInput => ({
  url,
  body,
  eventType: 'registered-requests',
  accountId: 'acc_test',
  msgId: 'ntf_0123456789',
  secrets: [secret],
  ...extra,
});

describe('deliverAttempt over HTTP', () => {
  let outbound: Outbound;
  let receiver: Receiver;
  before(async () => {
    outbound = createOutbound(config());
    receiver = await startHttpReceiver();
  });
  after(async () => {
    await outbound.close();
    await receiver.close();
  });

  it('POSTs the exact body with signed Standard Webhooks headers, event type and custom headers', async () => {
    receiver.respond(() => ({ status: 200, body: 'thanks' }));
    const result = await outbound.deliverAttempt(input(`${receiver.url}/hooks/registered?x=1`, { customHeaders: { 'X-Client-Tag': 'abc', 'Content-Type': 'text/plain', Authorization: 'nope' } }));
    assert.equal(result.ok, true, result.error);
    assert.equal(result.statusCode, 200);
    assert.equal(result.responseBody, 'thanks');
    assert.ok(result.latencyMs >= 0);
    const seen = receiver.requests.at(-1)!;
    assert.equal(seen.method, 'POST');
    assert.equal(seen.path, '/hooks/registered?x=1');
    assert.equal(seen.body, body);
    assert.equal(seen.headers['content-type'], 'application/json');
    assert.equal(seen.headers['user-agent'], 'RewardRequestService/1.0');
    assert.equal(seen.headers['x-webhook-event'], 'registered-requests');
    assert.equal(seen.headers['x-client-tag'], 'abc');
    assert.equal(seen.headers.authorization, undefined, 'a custom header cannot set Authorization');
    assert.equal(seen.headers['webhook-id'], 'ntf_0123456789');
    const headers = Object.fromEntries(Object.entries(seen.headers).map(([k, v]) => [k, String(v)]));
    assert.deepEqual(new Webhook(secret).verify(seen.body, headers), JSON.parse(body));
  });

  it('keeps webhook-id across attempts and signs each with its own timestamp', async () => {
    receiver.respond(() => ({ status: 500 }));
    await outbound.deliverAttempt(input(receiver.url, { timestamp: 1_700_000_000 }));
    await outbound.deliverAttempt(input(receiver.url, { timestamp: 1_700_000_060 }));
    const [a, b] = receiver.requests.slice(-2);
    assert.equal(a!.headers['webhook-id'], b!.headers['webhook-id']);
    assert.deepEqual([a!.headers['webhook-timestamp'], b!.headers['webhook-timestamp']], ['1700000000', '1700000060']);
    assert.notEqual(a!.headers['webhook-signature'], b!.headers['webhook-signature']);
  });

  it('sends Bearer and Basic credentials, with or without the scheme prefix', async () => {
    receiver.respond(() => ({ status: 204 }));
    const basic = Buffer.from('shop:p@ss').toString('base64');
    for (const [authorization, expected] of [
      [{ Bearer: 'tok123' }, 'Bearer tok123'],
      [{ Bearer: 'Bearer tok123' }, 'Bearer tok123'],
      [{ Basic: basic }, `Basic ${basic}`],
      [{ Basic: `Basic ${basic}` }, `Basic ${basic}`],
    ] as const) {
      const result = await outbound.deliverAttempt(input(receiver.url, { authorization, eventType: 'processed-requests' }));
      assert.equal(result.ok, true, result.error);
      assert.equal(receiver.requests.at(-1)!.headers.authorization, expected);
      assert.equal(receiver.requests.at(-1)!.headers['x-webhook-event'], 'processed-requests');
    }
  });

  it('reports non-2xx answers with status, body and Retry-After', async () => {
    receiver.respond(() => ({ status: 429, headers: { 'retry-after': '7200' }, body: '{"error":"slow down"}' }));
    const result = await outbound.deliverAttempt(input(receiver.url));
    assert.deepEqual(
      { ok: result.ok, statusCode: result.statusCode, responseBody: result.responseBody, retryAfter: result.retryAfter, error: result.error },
      { ok: false, statusCode: 429, responseBody: '{"error":"slow down"}', retryAfter: '7200', error: 'callback answered HTTP 429' },
    );
  });

  it('never follows a redirect', async () => {
    const elsewhere = await startHttpReceiver();
    try {
      receiver.respond(() => ({ status: 302, headers: { location: `${elsewhere.url}/moved` } }));
      const result = await outbound.deliverAttempt(input(receiver.url));
      assert.equal(result.ok, false);
      assert.equal(result.statusCode, 302);
      assert.match(result.error!, /redirects are not followed/);
      assert.equal(elsewhere.requests.length, 0);
    } finally {
      await elsewhere.close();
    }
  });

  it('keeps only the first 1 KiB of a large or endless answer', async () => {
    receiver.respond(() => ({ status: 200, body: 'a'.repeat(1024 * 1024) }));
    const large = await outbound.deliverAttempt(input(receiver.url));
    assert.equal(large.ok, true);
    assert.equal(large.responseBody, 'a'.repeat(1024));
    receiver.respond(() => ({ status: 200, body: 'b'.repeat(100), endless: true }));
    const endless = await outbound.deliverAttempt(input(receiver.url));
    assert.equal(endless.ok, true, endless.error);
    assert.equal(endless.responseBody!.length, 1024);
    assert.ok(endless.responseBody!.startsWith('b'.repeat(100) + 'x'));
  });

  it('fails with a clear error when the connection is refused', async () => {
    const result = await outbound.deliverAttempt(input(`http://127.0.0.1:${await unusedPort()}/hook`));
    assert.equal(result.ok, false);
    assert.equal(result.statusCode, undefined);
    assert.match(result.error!, /connection refused/);
  });

  it('a callback URL that is not a URL is a failed attempt, not an exception', async () => {
    const result = await outbound.deliverAttempt(input('not a url'));
    assert.equal(result.ok, false);
    assert.match(result.error!, /not a valid absolute URL/);
  });

  it('a missing signing secret is a failed attempt with the reason', async () => {
    const result = await outbound.deliverAttempt(input(receiver.url, { secrets: [] }));
    assert.equal(result.ok, false);
    assert.match(result.error!, /signing secret/);
  });
});

describe('CALLBACK_TIMEOUT bounds the whole call', () => {
  let outbound: Outbound;
  let receiver: Receiver;
  before(async () => {
    outbound = createOutbound(config({ callbackTimeoutMs: 200 }));
    receiver = await startHttpReceiver();
  });
  after(async () => {
    await outbound.close();
    await receiver.close();
  });

  it('times out when no answer comes', async () => {
    receiver.respond(() => new Promise(() => {}));
    const result = await outbound.deliverAttempt(input(receiver.url));
    assert.equal(result.ok, false);
    assert.match(result.error!, /timed out after 200 ms/);
  });

  it('times out when the answer body never ends, even after a 200 status line', async () => {
    receiver.respond(() => ({ status: 200, body: 'partial', stall: true }));
    const result = await outbound.deliverAttempt(input(receiver.url));
    assert.equal(result.ok, false);
    assert.match(result.error!, /timed out after 200 ms/);
  });
});

describe('SSRF guard at connect time', () => {
  let outbound: Outbound;
  let receiver: Receiver;
  before(async () => {
    outbound = createOutbound(config({ callbackAllowPrivateNetworks: false }));
    receiver = await startHttpReceiver();
  });
  after(async () => {
    await outbound.close();
    await receiver.close();
  });

  it('refuses loopback literals and names resolving to loopback; nothing reaches the receiver', async () => {
    for (const url of [`${receiver.url}/hook`, `http://localhost:${receiver.port}/hook`, `http://[::ffff:127.0.0.1]:${receiver.port}/`]) {
      const result = await outbound.deliverAttempt(input(url));
      assert.equal(result.ok, false, url);
      assert.match(result.error!, /refused to connect: .* loopback, private, link-local or reserved address/, url);
    }
    assert.equal(receiver.requests.length, 0);
  });

  it('refuses an OAuth2 token URL on a private address too', async () => {
    const oauth2 = { client_id: 'c', client_secret: 's', url: `http://localhost:${receiver.port}/token` };
    const result = await outbound.deliverAttempt(input('https://callback.invalid/hook', { authorization: { oauth2 } }));
    assert.equal(result.ok, false);
    assert.match(result.error!, /^OAuth2 token request to http:\/\/localhost:\d+\/token failed: refused to connect/);
    assert.equal(receiver.requests.length, 0);
  });
});

describe('concurrency limits: by account and resolved address', () => {
  const limits = { overall: 8, perAddress: 2, reserve: 2, lightBelow: 1 };

  it('a slow receiver does not delay deliveries to another address', async () => {
    const outbound = createOutbound(config(), { limits });
    const release = gate();
    const slow = await startHttpReceiver(async () => (await release.wait, { status: 200 }));
    const fast = await startHttpReceiver(() => ({ status: 204 }), '127.0.0.2');
    try {
      const slowResults = Array.from({ length: 5 }, () => outbound.deliverAttempt(input(slow.url)));
      const fastResult = await outbound.deliverAttempt(input(fast.url));
      assert.equal(fastResult.ok, true);
      assert.deepEqual(outbound.limiter.stats(), { active: 2, waiting: 3, activeByAccount: { acc_test: 2 } });
      release.open();
      assert.ok((await Promise.all(slowResults)).every((r) => r.ok));
      assert.equal(slow.requests.length, 5);
    } finally {
      release.open();
      await outbound.close();
      await Promise.all([slow.close(), fast.close()]);
    }
  });

  it("one account's URLs on other ports of the same address share that address's cap", async () => {
    const outbound = createOutbound(config(), { limits });
    const release = gate();
    const hang = async () => (await release.wait, { status: 204 });
    const [first, second] = await Promise.all([startHttpReceiver(hang), startHttpReceiver(hang)]);
    try {
      const calls = [first, second, first, second].map((receiver) => outbound.deliverAttempt(input(`${receiver.url}/hook`)));
      await eventually(() => first.requests.length + second.requests.length === 2);
      assert.deepEqual(outbound.limiter.stats(), { active: 2, waiting: 2, activeByAccount: { acc_test: 2 } }, 'two calls in flight to 127.0.0.1, whatever the port');
      // Another account's calls to the same address are not held by this one's cap.
      const other = await startHttpReceiver(() => ({ status: 204 }));
      try {
        assert.equal((await outbound.deliverAttempt({ ...input(other.url), accountId: 'acc_other' })).ok, true);
      } finally {
        await other.close();
      }
      release.open();
      assert.ok((await Promise.all(calls)).every((r) => r.ok));
    } finally {
      release.open();
      await outbound.close();
      await Promise.all([first.close(), second.close()]);
    }
  });
});
