// needs: sqlite
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { SecretBox } from '../../src/domain/crypto/secret-box.js';
import { AccessTokens, InvalidTokenError } from '../../src/services/access-tokens.js';
import { KeyStore } from '../../src/services/key-store.js';
import { openStorage, type Storage } from '../../src/storage/database.js';
import { migrateToLatest } from '../../src/storage/migrations/index.js';

describe('AccessTokens verification cache', () => {
  let storage: Storage;
  let now = Date.now();
  const clock = () => now;
  let keys: KeyStore;
  before(async () => {
    storage = openStorage('sqlite::memory:');
    await migrateToLatest(storage.db);
    keys = new KeyStore(storage.db, new SecretBox(randomBytes(32).toString('base64')), clock);
    await keys.ensureSigningKey();
  });
  after(() => storage.close());

  it('a cached token still expires on time', async () => {
    const tokens = new AccessTokens(keys, 'https://issuer.test', 60_000, clock);
    const token = await tokens.issue({ clientId: 'c', accountId: 'a', scopes: ['requests:read'] });
    assert.deepEqual((await tokens.verify(token)).scopes, ['requests:read']);
    assert.deepEqual((await tokens.verify(token)).scopes, ['requests:read'], 'second verification (cached)');
    now += 61_000;
    await assert.rejects(tokens.verify(token), (error: unknown) => error instanceof InvalidTokenError && /expired/.test(error.message));
  });

  it('a cached token stops verifying once its key is retired for good', async () => {
    const tokens = new AccessTokens(keys, 'https://issuer.test', 60_000, clock);
    const token = await tokens.issue({ clientId: 'c', accountId: 'a', scopes: [] });
    await tokens.verify(token);
    await keys.rotate(0);
    await assert.rejects(tokens.verify(token), /unknown signing key/);
  });

  it('a token whose signature was altered is never served from the cache', async () => {
    const tokens = new AccessTokens(keys, 'https://issuer.test', 60_000, clock);
    const token = await tokens.issue({ clientId: 'c', accountId: 'a', scopes: [] });
    await tokens.verify(token);
    const last = token.at(-2) === 'A' ? 'B' : 'A';
    await assert.rejects(tokens.verify(`${token.slice(0, -2)}${last}${token.at(-1)}`), InvalidTokenError);
  });

  it('the same grant within one second gets the same token; a new second, key, scope or client a new one', async () => {
    const tokens = new AccessTokens(keys, 'https://issuer.test', 60_000, clock);
    now = Math.ceil(now / 1000) * 1000;
    const grant = { clientId: 'c', accountId: 'a', scopes: ['requests:read'] };
    const first = await tokens.issue(grant);
    assert.equal(await tokens.issue({ ...grant }), first);
    assert.notEqual(await tokens.issue({ ...grant, scopes: ['requests:read', 'requests:write'] }), first);
    assert.notEqual(await tokens.issue({ ...grant, clientId: 'd' }), first);
    now += 999;
    assert.equal(await tokens.issue(grant), first, 'same second');
    now += 1;
    const next = await tokens.issue(grant);
    assert.notEqual(next, first);
    await keys.rotate(60_000);
    const rotated = await tokens.issue(grant);
    assert.notEqual(rotated, next);
    const kid = (t: string) => JSON.parse(Buffer.from(t.split('.')[0]!, 'base64url').toString()).kid;
    assert.notEqual(kid(rotated), kid(next));
  });
});
