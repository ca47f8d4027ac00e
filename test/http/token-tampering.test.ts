// needs: database
import assert from 'node:assert/strict';
import { createHmac, createPublicKey, randomUUID, sign } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { testDialects } from '../support/databases.js';
import { api, startTestApp, type ClientCredentials, type TestApp } from '../support/test-app.js';

/**
 * The bearer check against tampered and misused tokens, over HTTP. Tokens are built here with the
 * service's own signing key where a claim check is under test, so only that claim is wrong.
 */

const b64 = (value: object | Buffer) => (Buffer.isBuffer(value) ? value : Buffer.from(JSON.stringify(value))).toString('base64url');

for (const dialect of testDialects()) {
  describe(`access token tampering matrix [${dialect}]`, () => {
    let t: TestApp;
    let client: ClientCredentials;
    let kid: string;
    /** Claims of a token the service would issue now. */
    const claims = (overrides: Record<string, unknown> = {}) => {
      const now = Math.floor(Date.now() / 1000);
      return {
        iss: t.config.publicUrl,
        sub: client.clientId,
        aud: t.config.publicUrl,
        exp: now + 300,
        iat: now,
        jti: randomUUID(),
        client_id: client.clientId,
        scope: 'subscriptions:read',
        account_id: client.accountId,
        ...overrides,
      };
    };
    /** Signed with the service's current key (EdDSA), header and claims as given. */
    const signed = async (payload: object, header: Record<string, unknown> = {}) => {
      const { key } = await t.deps.keys.signer();
      const input = `${b64({ alg: 'EdDSA', typ: 'at+jwt', kid, ...header })}.${b64(payload)}`;
      return `${input}.${b64(sign(null, Buffer.from(input), key))}`;
    };
    const refused = async (token: string, reason: RegExp) => {
      const response = await api(t.url, 'GET', '/v2/subscriptions', { token });
      assert.equal(response.status, 401, `${reason}: ${JSON.stringify(response.body)}`);
      assert.match(String(response.headers.get('www-authenticate')), /error="invalid_token"/);
      assert.match(String(response.headers.get('www-authenticate')), reason);
    };

    before(async () => {
      t = await startTestApp(dialect);
      client = await t.createClientAccount('tamper-co');
      kid = (await t.deps.keys.signer()).kid;
    });
    after(() => t.close());

    it('a token built the way the service builds them is accepted (the baseline of this matrix)', async () => {
      assert.equal((await api(t.url, 'GET', '/v2/subscriptions', { token: await signed(claims()) })).status, 200);
    });

    it('alg none, HS256 keyed with the public key, and an unknown kid are refused', async () => {
      const payload = b64(claims({ scope: 'admin' }));
      await refused(`${b64({ alg: 'none', typ: 'at+jwt', kid })}.${payload}.`, /unsupported token algorithm/);
      // The classic key-confusion attack: HMAC with the published public key as the secret.
      const [jwk] = ((await (await fetch(`${t.url}/.well-known/jwks.json`)).json()) as { keys: Array<Record<string, string>> }).keys;
      const publicPem = createPublicKey({ key: jwk as never, format: 'jwk' }).export({ type: 'spki', format: 'pem' });
      const hsInput = `${b64({ alg: 'HS256', typ: 'at+jwt', kid })}.${payload}`;
      await refused(`${hsInput}.${createHmac('sha256', publicPem).update(hsInput).digest('base64url')}`, /unsupported token algorithm/);
      await refused(await signed(claims(), { kid: 'no-such-key' }), /unknown signing key/);
    });

    it('a valid signature over a modified payload, and a signature of the wrong length, are refused', async () => {
      const token = await signed(claims());
      const [header, , signature] = token.split('.');
      await refused(`${header}.${b64(claims({ scope: 'admin subscriptions:read' }))}.${signature}`, /signature invalid/);
      await refused(`${token.split('.').slice(0, 2).join('.')}.${b64(Buffer.alloc(32))}`, /signature invalid/);
    });

    it('expired, issued in the future, wrong issuer, wrong audience, wrong type and missing claims are refused', async () => {
      const now = Math.floor(Date.now() / 1000);
      await refused(await signed(claims({ exp: now - 1 })), /expired/);
      await refused(await signed(claims({ iat: now + 3600, exp: now + 7200 })), /issued in the future/);
      await refused(await signed(claims({ iss: 'https://attacker.example' })), /issuer invalid/);
      await refused(await signed(claims({ aud: 'https://attacker.example' })), /audience invalid/);
      await refused(await signed(claims(), { typ: 'JWT' }), /not an access token/);
      await refused(await signed(claims(), { crit: ['exp'] }), /critical header/);
      await refused(await signed(claims({ account_id: undefined })), /lacks client, account or jti/);
    });

    it('a key rotated out past its grace period no longer verifies its tokens', async () => {
      const old = await t.token(client);
      assert.equal((await api(t.url, 'GET', '/v2/subscriptions', { token: old })).status, 200);
      await t.deps.keys.rotate(0);
      await refused(old, /unknown signing key/);
      kid = (await t.deps.keys.signer()).kid;
      assert.equal((await api(t.url, 'GET', '/v2/subscriptions', { token: await t.token(client) })).status, 200, 'a new token verifies');
    });

    it('a token issued before its account is deactivated is refused from then on (invalid_token), and new tokens are refused', async () => {
      const operator = await t.token(t.operator, 'admin');
      const victim = await t.createClientAccount('deactivated-co');
      const token = await t.token(victim);
      assert.equal((await api(t.url, 'GET', '/v2/subscriptions', { token })).status, 200);
      const disabled = await api(t.url, 'PATCH', `/v2/admin/accounts/${victim.accountId}`, { token: operator, body: { active: false } });
      assert.equal(disabled.status, 200, JSON.stringify(disabled.body));
      const newToken = await fetch(`${t.url}/v2/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'client_credentials', client_id: victim.clientId, client_secret: victim.clientSecret, scope: 'subscriptions:read' }),
      });
      assert.equal(newToken.status, 401, 'no new token for a disabled account');
      // docs/tokens.md, "Deactivation": on every process within AUTH_REFRESH_INTERVAL, on this one at once (test/http/token-revocation.test.ts).
      await refused(token, /the account was deactivated/);
    });
  });
}
