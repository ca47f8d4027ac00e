// needs: sqlite
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { createAccount, createClient } from '../../src/services/accounts.js';
import { SecretBox } from '../../src/domain/crypto/secret-box.js';
import { AccessTokens } from '../../src/services/access-tokens.js';
import { FailureLimiter } from '../../src/domain/tokens/failure-limiter.js';
import { KeyStore } from '../../src/services/key-store.js';
import { ClientCache } from '../../src/storage/client-cache.js';
import { createTokenEndpoint, type TokenEndpoint } from '../../src/http/token-endpoint.js';
import { openStorage, type Storage } from '../../src/storage/database.js';
import { migrateToLatest } from '../../src/storage/migrations/index.js';
import { updateOAuthClient } from '../../src/storage/repositories/oauth-clients.js';

/**
 * The endpoint answers a request it answered earlier in the same clock second from memory
 * (RecentResponses). These pin down when it must not: the clock is under the test's control.
 */
describe('token endpoint: remembered answers within one second', () => {
  let storage: Storage;
  let now = Math.floor(Date.now() / 1000) * 1000 + 100;
  const clock = () => now;
  let keys: KeyStore;
  let failures: FailureLimiter;
  let endpoint: TokenEndpoint;
  let clientCache: ClientCache;

  before(async () => {
    storage = openStorage('sqlite::memory:');
    await migrateToLatest(storage.db);
    keys = new KeyStore(storage.db, new SecretBox(randomBytes(32).toString('base64')), clock);
    await keys.ensureSigningKey();
    failures = new FailureLimiter({ perClientAndAddress: 3, perAddress: 100, windowMs: 60_000 }, clock);
    clientCache = new ClientCache(storage.db);
    endpoint = createTokenEndpoint({ db: storage.db, clientCache, keys, tokens: new AccessTokens(keys, 'https://issuer.test', 60_000, clock), failures, clock, log: pino({ level: 'silent' }) });
  });
  after(() => storage.close());

  async function newClient() {
    const account = await createAccount(storage.db, `account-${randomBytes(4).toString('hex')}`);
    const { client, clientSecret } = await createClient(storage.db, account.id, ['requests:read', 'events:read']);
    return { clientId: client.clientId, clientSecret };
  }
  const request = (client: { clientId: string; clientSecret: string }, scope = 'requests:read', secret = client.clientSecret) =>
    endpoint({
      version: 2,
      contentType: 'application/x-www-form-urlencoded',
      authorization: undefined,
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: client.clientId, client_secret: secret, scope }).toString(),
      sourceAddress: '127.0.0.1',
    });
  const claims = (body: string) => JSON.parse(Buffer.from(JSON.parse(body).access_token.split('.')[1], 'base64url').toString());

  it('the same request in the same second gets the same answer; the next second a new token', async () => {
    const client = await newClient();
    const first = await request(client);
    assert.equal(first.status, 200);
    assert.equal((await request(client)).body, first.body);
    // A different scope is a different request.
    assert.equal(JSON.parse((await request(client, 'events:read')).body).scope, 'events:read');
    now += 1000;
    const next = await request(client);
    assert.equal(next.status, 200);
    assert.equal(claims(next.body).iat, claims(first.body).iat + 1);
  });

  it('a client disabled through this process is refused at once', async () => {
    const client = await newClient();
    assert.equal((await request(client)).status, 200);
    await updateOAuthClient(storage.db, client.clientId, { active: false });
    clientCache.forget(); // as the admin routes do after a change
    const refused = await request(client);
    assert.equal(refused.status, 401);
    assert.equal(JSON.parse(refused.body).error, 'invalid_client');
  });

  it('after a key rotation the next answer carries a token signed with the new key', async () => {
    const client = await newClient();
    const before = await request(client);
    const { kid } = await keys.rotate(60_000);
    const after = await request(client);
    const header = (body: string) => JSON.parse(Buffer.from(JSON.parse(body).access_token.split('.')[0], 'base64url').toString());
    assert.notEqual(header(before.body).kid, kid);
    assert.equal(header(after.body).kid, kid);
  });

  it('a client locked out by failed attempts gets 429 even for a request answered this second', async () => {
    const client = await newClient();
    assert.equal((await request(client)).status, 200);
    for (let i = 0; i < 3; i++) assert.equal((await request(client, 'requests:read', `wrong-${i}`)).status, 401);
    const limited = await request(client);
    assert.equal(limited.status, 429);
    assert.equal(JSON.parse(limited.body).error, 'temporarily_unavailable');
    assert.ok(Number(limited.headers['retry-after']) > 0);
    now += 60_000; // the lockout (of this client at 127.0.0.1) ends for the tests after this one
  });

  it('failures are not remembered: the right secret after a wrong one is served', async () => {
    const client = await newClient();
    assert.equal((await request(client, 'requests:read', 'wrong')).status, 401);
    assert.equal((await request(client)).status, 200);
  });
});
