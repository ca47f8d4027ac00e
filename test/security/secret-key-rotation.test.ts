// needs: database
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { runCli } from '../../src/cli/program.js';
import { loadConfig } from '../../src/config.js';
import { createDeps } from '../../src/deps.js';
import { SecretBox } from '../../src/domain/crypto/secret-box.js';
import { getSubscription } from '../../src/services/subscriptions.js';
import { loadSigningSecrets } from '../../src/services/signing-secrets.js';
import { testDialects } from '../support/databases.js';
import { api, startTestApp, type TestApp } from '../support/test-app.js';

const newKey = () => randomBytes(32).toString('base64');

describe('SecretBox with previous keys', () => {
  it('seals with the current key, opens with any accepted key, reseals only what an older key sealed', () => {
    const [oldKey, currentKey] = [newKey(), newKey()];
    const sealedOld = new SecretBox(oldKey).encrypt('whsec_abc', 'purpose:1');
    const box = new SecretBox(currentKey, [oldKey]);
    assert.equal(box.decrypt(sealedOld, 'purpose:1'), 'whsec_abc');
    const resealed = box.reseal(sealedOld, 'purpose:1')!;
    assert.notEqual(resealed, undefined);
    assert.equal(new SecretBox(currentKey).decrypt(resealed, 'purpose:1'), 'whsec_abc');
    assert.equal(box.reseal(resealed, 'purpose:1'), undefined, 'already under the current key');
    assert.throws(() => new SecretBox(currentKey).decrypt(sealedOld, 'purpose:1'), 'the old key is needed to open it');
    assert.throws(() => box.decrypt(sealedOld, 'purpose:2'), 'bound to its purpose under every key');
    assert.throws(() => new SecretBox(currentKey, ['short']), /SECRET_KEY_PREVIOUS/);
  });
});

for (const dialect of testDialects()) {
  describe(`rotating SECRET_KEY without downtime [${dialect}]`, () => {
    let t: TestApp;
    let oldKey: string;
    before(async () => {
      oldKey = newKey();
      t = await startTestApp(dialect, { SECRET_KEY: oldKey });
    });
    after(() => t.close());

    it('the new key with the old one accepted reads everything; reencrypt moves it all, in batches, once; then the old key can go', async () => {
      const client = await t.createClientAccount();
      const token = await t.token(client);
      const subscriptions: Array<{ _id: string; secret: string }> = [];
      for (let i = 0; i < 5; i++) {
        const created = await api(t.url, 'POST', '/v2/subscriptions', {
          token,
          body: { event: 'registered-requests', callback: { url: `http://127.0.0.1:9/hook-${i}`, authorization: { Bearer: `token-${i}` } } },
        });
        assert.equal(created.status, 201, JSON.stringify(created.body));
        subscriptions.push(created.body as { _id: string; secret: string });
      }
      const currentKey = newKey();
      const env = (secretKey: string, previous?: string) => ({
        DATA_DIR: t.dataDir,
        DATABASE_URL: t.databaseUrl,
        SECRET_KEY: secretKey,
        ...(previous ? { SECRET_KEY_PREVIOUS: previous } : {}),
        LOG_LEVEL: 'silent',
      });
      const withDeps = async <T>(environment: Record<string, string>, run: (deps: Awaited<ReturnType<typeof createDeps>>) => Promise<T>) => {
        const deps = await createDeps(loadConfig(environment), { prepare: false });
        try {
          return await run(deps);
        } finally {
          await deps.close();
        }
      };
      const readsAll = (environment: Record<string, string>) =>
        withDeps(environment, async (deps) => {
          for (const [i, sub] of subscriptions.entries()) {
            const stored = await getSubscription(deps.db, deps.box, client.accountId, sub._id);
            assert.deepEqual(stored?.callback.authorization, { Bearer: `token-${i}` });
            assert.equal((await loadSigningSecrets(deps.db, deps.box, { subscriptionId: sub._id }))[0]?.secret, sub.secret);
          }
          await deps.keys.ensureSigningKey();
          return true;
        });

      await readsAll(env(currentKey, oldKey));
      const cli = async (environment: Record<string, string>, ...args: string[]) => {
        let out = '';
        let err = '';
        const code = await runCli(args, { env: environment, out: (text) => (out += text), err: (text) => (err += text) });
        return { code, json: out ? JSON.parse(out) : undefined, err };
      };
      const first = await cli(env(currentKey, oldKey), 'secrets', 'reencrypt', '--batch-size', '2');
      assert.equal(first.code, 0, first.err);
      assert.deepEqual(first.json.subscriptions, { checked: 5, reencrypted: 5 });
      assert.ok(first.json.webhook_signing_secrets.reencrypted >= 5);
      assert.ok(first.json.signing_keys.reencrypted >= 1);
      const second = await cli(env(currentKey, oldKey), 'secrets', 'reencrypt');
      assert.equal(second.code, 0);
      for (const counts of Object.values<{ checked: number; reencrypted: number }>(second.json)) assert.equal(counts.reencrypted, 0);

      await readsAll(env(currentKey));
      await assert.rejects(readsAll(env(oldKey)), 'the old key alone no longer opens them');
      assert.equal((await cli(env(currentKey), 'secrets', 'reencrypt', '--batch-size', '0')).code, 2);
    });
  });
}
