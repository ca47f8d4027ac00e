// needs: database
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Agent, fetch as undiciFetch } from 'undici';
import { parseTrustProxy } from '../../src/config.js';
import { addressBlock, FailureLimiter } from '../../src/domain/tokens/failure-limiter.js';
import { clientAddress } from '../../src/http/client-address.js';
import { testDialects } from '../support/databases.js';
import { startTestApp, type ClientCredentials, type TestApp } from '../support/test-app.js';

describe('FailureLimiter: by address and by (client, address), never by client id alone', () => {
  const limits = { perClientAndAddress: 3, perAddress: 5, windowMs: 60_000 };

  it('refuses a client at an address after its failures there, until the window ends; the same client elsewhere is served', () => {
    let now = 1_000_000;
    const limiter = new FailureLimiter(limits, () => now);
    const victimFromGuesser = { clientId: 'victim', address: '192.0.2.2' };
    for (let i = 0; i < 3; i++) {
      assert.equal(limiter.retryAfterSeconds(victimFromGuesser), 0);
      limiter.recordFailure(victimFromGuesser);
    }
    assert.equal(limiter.retryAfterSeconds(victimFromGuesser), 60);
    assert.equal(limiter.retryAfterSeconds({ clientId: 'victim', address: '192.0.2.1' }), 0, 'the client from another address');
    assert.equal(limiter.retryAfterSeconds({ clientId: 'other', address: '192.0.2.2' }), 0, 'another client from the address, under its limit');
    now += 59_000;
    assert.equal(limiter.retryAfterSeconds(victimFromGuesser), 1);
    now += 1_000;
    assert.equal(limiter.retryAfterSeconds(victimFromGuesser), 0);
  });

  it('refuses an address after its failures for any clients, and only that address', () => {
    const limiter = new FailureLimiter(limits, () => 0);
    for (let i = 0; i < 5; i++) limiter.recordFailure({ clientId: `client-${i}`, address: '192.0.2.2' });
    assert.ok(limiter.retryAfterSeconds({ clientId: 'fresh', address: '192.0.2.2' }) > 0);
    assert.equal(limiter.retryAfterSeconds({ clientId: 'fresh', address: '192.0.2.3' }), 0);
  });

  it('failures for one client from many addresses lock out none of them for that client beyond their own pair', () => {
    const limiter = new FailureLimiter(limits, () => 0);
    for (let i = 0; i < 50; i++) limiter.recordFailure({ clientId: 'victim', address: `198.51.100.${i}` });
    assert.equal(limiter.retryAfterSeconds({ clientId: 'victim', address: '192.0.2.1' }), 0);
  });

  it('counts an IPv6 caller by its /64', () => {
    assert.equal(addressBlock('2001:db8:1:2:aaaa::1'), '2001:db8:1:2::/64');
    assert.equal(addressBlock('2001:db8:1:2::bbbb'), '2001:db8:1:2::/64');
    assert.equal(addressBlock('2001:db8::1'), '2001:db8:0:0::/64');
    assert.equal(addressBlock('::1'), '0:0:0:0::/64');
    assert.equal(addressBlock('192.0.2.1'), '192.0.2.1');
    const limiter = new FailureLimiter(limits, () => 0);
    for (let i = 0; i < 5; i++) limiter.recordFailure({ clientId: `c${i}`, address: `2001:db8:1:2::${i + 1}` });
    assert.ok(limiter.retryAfterSeconds({ clientId: 'fresh', address: '2001:db8:1:2:ffff::1' }) > 0, 'another address in the /64');
    assert.equal(limiter.retryAfterSeconds({ clientId: 'fresh', address: '2001:db8:1:3::1' }), 0, 'the next /64');
  });
});

describe('TRUST_PROXY: the caller address', () => {
  const of = (setting: string, peer: string, forwardedFor?: string) => clientAddress(parseTrustProxy(setting)).of(peer, forwardedFor);

  it('false (the default) ignores X-Forwarded-For', () => {
    assert.equal(of('false', '192.0.2.9', '203.0.113.7'), '192.0.2.9');
    assert.equal(of('0', '::ffff:192.0.2.9', '203.0.113.7'), '192.0.2.9');
  });

  it('true believes every peer: the leftmost address of the header', () => {
    assert.equal(of('true', '10.0.0.1', '203.0.113.7, 10.0.0.2'), '203.0.113.7');
    assert.equal(of('true', '10.0.0.1'), '10.0.0.1');
  });

  it('a number of hops takes that many proxies off the right', () => {
    assert.equal(of('1', '10.0.0.1', '198.51.100.1, 203.0.113.7'), '203.0.113.7');
    assert.equal(of('2', '10.0.0.1', '198.51.100.1, 203.0.113.7, 10.0.0.2'), '203.0.113.7');
    assert.equal(of('2', '10.0.0.1', '203.0.113.7'), '203.0.113.7');
  });

  it('a list of proxies believes only them, walking right to left to the first other address', () => {
    assert.equal(of('10.0.0.0/8, 192.0.2.5', '10.1.2.3', '203.0.113.7, 192.0.2.5'), '203.0.113.7');
    assert.equal(of('10.0.0.0/8', '198.51.100.4', '203.0.113.7'), '198.51.100.4', 'an untrusted peer cannot name another caller');
    assert.equal(of('10.0.0.0/8', '::ffff:10.0.0.1', '203.0.113.7'), '203.0.113.7', 'an IPv4 proxy on a dual-stack socket');
    assert.equal(of('fd00::/8', 'fd00::1', '2001:db8::7'), '2001:db8::7');
  });

  it('refuses what is none of those, naming the entry', () => {
    for (const bad of ['yes', '10.0.0.0/33', 'example.com', '10.0.0.1/8/2', '17', ',']) assert.throws(() => parseTrustProxy(bad), Error, bad);
  });
});

/** Token requests sent from a chosen loopback address (the whole of 127.0.0.0/8 is loopback). */
class Callers {
  readonly #agents = new Map<string, Agent>();

  async attempt(base: string, client: ClientCredentials, secret: string, options: { from?: string; forwardedFor?: string; path?: string } = {}) {
    const from = options.from ?? '127.0.0.1';
    let agent = this.#agents.get(from);
    if (!agent) this.#agents.set(from, (agent = new Agent({ localAddress: from })));
    const response = await undiciFetch(`${base}${options.path ?? '/v2/oauth/token'}`, {
      method: 'POST',
      dispatcher: agent,
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...(options.forwardedFor ? { 'x-forwarded-for': options.forwardedFor } : {}) },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: client.clientId, client_secret: secret, scope: 'requests:read' }).toString(),
    });
    return { status: response.status, headers: response.headers, body: (await response.json()) as { error?: string; access_token?: string } };
  }

  close() {
    return Promise.all([...this.#agents.values()].map((agent) => agent.close()));
  }
}

/** The server's fast path answers the exact path; a trailing slash reaches the Fastify route. */
const PATHS = ['/v2/oauth/token', '/v2/oauth/token/'];

for (const dialect of testDialects()) {
  describe(`token endpoint rate limits repeated authentication failures [${dialect}]`, () => {
    let t: TestApp;
    const callers = new Callers();
    before(async () => {
      t = await startTestApp(dialect);
    });
    after(async () => {
      await callers.close();
      await t.close();
    });
    const newClient = () => t.createClientAccount(undefined, ['requests:read']);

    it('ten wrong secrets for a client from one address: the right secret from another address gets a token; from the guessing one, 429', async () => {
      const victim = await newClient();
      for (let i = 0; i < 10; i++) assert.equal((await callers.attempt(t.url, victim, `wrong-${i}`, { from: '127.0.0.2' })).status, 401);
      for (const path of PATHS) {
        const rightful = await callers.attempt(t.url, victim, victim.clientSecret, { from: '127.0.0.1', path });
        assert.equal(rightful.status, 200, `${path}: ${JSON.stringify(rightful.body)}`);
        const guesser = await callers.attempt(t.url, victim, victim.clientSecret, { from: '127.0.0.2', path });
        assert.equal(guesser.status, 429, path);
        const retryAfter = Number(guesser.headers.get('retry-after'));
        assert.ok(retryAfter > 0 && retryAfter <= 60, `Retry-After ${retryAfter}`);
        assert.equal(guesser.headers.get('cache-control'), 'no-store');
        assert.equal(guesser.body.error, 'temporarily_unavailable');
      }
      // The guesser's other clients are not locked out by its ten failures for this one.
      const neighbour = await newClient();
      assert.equal((await callers.attempt(t.url, neighbour, neighbour.clientSecret, { from: '127.0.0.2' })).status, 200);
    });

    it('an address that failed 100 times, whatever client ids it named, is refused for every client; other addresses are not', async () => {
      const guessed = await Promise.all(Array.from({ length: 10 }, newClient));
      for (const client of guessed) for (let i = 0; i < 10; i++) assert.equal((await callers.attempt(t.url, client, `wrong-${i}`, { from: '127.0.0.3' })).status, 401);
      const bystander = await newClient();
      for (const path of PATHS) {
        assert.equal((await callers.attempt(t.url, bystander, bystander.clientSecret, { from: '127.0.0.3', path })).status, 429, path);
        assert.equal((await callers.attempt(t.url, bystander, bystander.clientSecret, { from: '127.0.0.4', path })).status, 200, path);
      }
    });

    it('without TRUST_PROXY, X-Forwarded-For does not change the address that is counted', async () => {
      const victim = await newClient();
      for (let i = 0; i < 10; i++) await callers.attempt(t.url, victim, `wrong-${i}`, { from: '127.0.0.5', forwardedFor: `203.0.113.${i}` });
      for (const path of PATHS) {
        assert.equal((await callers.attempt(t.url, victim, victim.clientSecret, { from: '127.0.0.5', forwardedFor: '198.51.100.1', path })).status, 429, path);
        assert.equal((await callers.attempt(t.url, victim, victim.clientSecret, { from: '127.0.0.6', path })).status, 200, `${path}: another address`);
      }
    });
  });

  describe(`token endpoint behind a proxy: TRUST_PROXY=127.0.0.1 [${dialect}]`, () => {
    let t: TestApp;
    const callers = new Callers();
    before(async () => {
      t = await startTestApp(dialect, { TRUST_PROXY: '127.0.0.1' });
    });
    after(async () => {
      await callers.close();
      await t.close();
    });

    it('counts the address the proxy forwards, alike on the fast path and through Fastify', async () => {
      const victim = await t.createClientAccount(undefined, ['requests:read']);
      for (let i = 0; i < 10; i++) assert.equal((await callers.attempt(t.url, victim, `wrong-${i}`, { forwardedFor: '203.0.113.7' })).status, 401);
      for (const path of PATHS) {
        assert.equal((await callers.attempt(t.url, victim, victim.clientSecret, { forwardedFor: '203.0.113.8', path })).status, 200, `${path}: another caller behind the proxy`);
        assert.equal((await callers.attempt(t.url, victim, victim.clientSecret, { forwardedFor: '198.51.100.9, 203.0.113.7', path })).status, 429, `${path}: the guesser`);
      }
    });

    it('a peer that is not a trusted proxy is counted by its own address, whatever it forwards', async () => {
      const victim = await t.createClientAccount(undefined, ['requests:read']);
      for (let i = 0; i < 10; i++) await callers.attempt(t.url, victim, `wrong-${i}`, { from: '127.0.0.2', forwardedFor: `203.0.113.${i}` });
      for (const path of PATHS) {
        assert.equal((await callers.attempt(t.url, victim, victim.clientSecret, { from: '127.0.0.2', forwardedFor: '198.51.100.1', path })).status, 429, path);
        // Through the proxy, 127.0.0.2 is the guesser's address: still locked out; anyone else is served.
        assert.equal((await callers.attempt(t.url, victim, victim.clientSecret, { forwardedFor: '127.0.0.2', path })).status, 429, path);
        assert.equal((await callers.attempt(t.url, victim, victim.clientSecret, { forwardedFor: '203.0.113.1', path })).status, 200, path);
      }
    });
  });
}
