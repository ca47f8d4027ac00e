// needs: sqlite
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { SecretBox } from '../../src/domain/crypto/secret-box.js';
import { createAccount, createClient } from '../../src/services/accounts.js';
import { AccessTokens } from '../../src/services/access-tokens.js';
import { grantClientCredentials } from '../../src/services/client-credentials.js';
import { generateClientSecret, hashClientSecret } from '../../src/domain/tokens/client-secret.js';
import { FailureLimiter } from '../../src/domain/tokens/failure-limiter.js';
import { KeyStore } from '../../src/services/key-store.js';
import { OAuthError } from '../../src/domain/tokens/oauth-errors.js';
import { openStorage, type Storage } from '../../src/storage/database.js';
import { migrateToLatest } from '../../src/storage/migrations/index.js';
import { updateOAuthClient } from '../../src/storage/repositories/oauth-clients.js';
import { CLIENT_CACHE_MS, ClientCache } from '../../src/storage/client-cache.js';

/**
 * The token endpoint reuses a client row for CLIENT_CACHE_MS. Changes through this process take
 * effect at once (the admin routes forget the cache); "another process" is stood for by SQL.
 */
describe('client credentials grant: the client cache', () => {
  let storage: Storage;
  let now = Date.now();
  const clock = () => now;
  let deps: Parameters<typeof grantClientCredentials>[0];

  before(async () => {
    storage = openStorage('sqlite::memory:');
    await migrateToLatest(storage.db);
    const keys = new KeyStore(storage.db, new SecretBox(randomBytes(32).toString('base64')), clock);
    await keys.ensureSigningKey();
    deps = {
      clientCache: new ClientCache(storage.db),
      tokens: new AccessTokens(keys, 'https://issuer.test', 60_000, clock),
      failures: new FailureLimiter({ perClientAndAddress: 1_000, perAddress: 1_000, windowMs: 60_000 }, clock),
      clock,
    };
  });
  after(() => storage.close());

  async function newClient() {
    const account = await createAccount(storage.db, `account-${randomBytes(4).toString('hex')}`);
    const { client, clientSecret } = await createClient(storage.db, account.id, ['requests:read']);
    return { clientId: client.clientId, clientSecret };
  }
  const grant = (clientId: string, clientSecret: string) =>
    grantClientCredentials(deps, { clientId, clientSecret, usedBasicAuth: false, sourceAddress: '127.0.0.1', scope: 'requests:read', scopeRequired: true });
  const refused = (code: string) => (error: unknown) => error instanceof OAuthError && error.code === code;

  it('a client disabled by another process stops getting tokens once the cached row is older than CLIENT_CACHE_MS', async () => {
    const { clientId, clientSecret } = await newClient();
    await grant(clientId, clientSecret);
    await storage.db.updateTable('oauth_clients').set({ active: 0 }).where('client_id', '=', clientId).execute();
    now += CLIENT_CACHE_MS - 1;
    assert.equal((await grant(clientId, clientSecret)).token_type, 'Bearer', 'still served from the cached row');
    now += 2;
    await assert.rejects(grant(clientId, clientSecret), refused('invalid_client'));
  });

  it('a change made through this process takes effect at once', async () => {
    const { clientId, clientSecret } = await newClient();
    await grant(clientId, clientSecret);
    await updateOAuthClient(storage.db, clientId, { active: false });
    deps.clientCache.forget(); // as the admin routes do after a change
    await assert.rejects(grant(clientId, clientSecret), refused('invalid_client'));
  });

  it('a secret rotated by another process works at once: a mismatch re-reads the client', async () => {
    const { clientId, clientSecret } = await newClient();
    await grant(clientId, clientSecret);
    const rotated = generateClientSecret();
    await storage.db
      .updateTable('oauth_clients')
      .set({ secret_hash: hashClientSecret(rotated) })
      .where('client_id', '=', clientId)
      .execute();
    assert.equal((await grant(clientId, rotated)).token_type, 'Bearer');
    await assert.rejects(grant(clientId, clientSecret), refused('invalid_client'), 'the replaced secret, with no grace period, is refused');
  });

  it('an unknown client id is looked up every time: a client created by another process is served at once', async () => {
    const { clientId, clientSecret } = await newClient();
    await storage.db.deleteFrom('oauth_clients').where('client_id', '=', clientId).execute();
    await assert.rejects(grant(clientId, clientSecret), refused('invalid_client'));
    await storage.db
      .insertInto('oauth_clients')
      .values({
        client_id: clientId,
        account_id: (await storage.db.selectFrom('accounts').select('id').executeTakeFirstOrThrow()).id,
        scopes: 'requests:read',
        secret_hash: hashClientSecret(clientSecret),
        previous_secret_hash: null,
        previous_secret_expires_at: null,
        active: 1,
        created_at: now,
        updated_at: now,
      })
      .execute();
    assert.equal((await grant(clientId, clientSecret)).token_type, 'Bearer');
  });
});
