// needs: database
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { SignJWT, generateKeyPair } from 'jose';
import { AccessTokens } from '../../src/services/access-tokens.js';
import { testDialects } from '../support/databases.js';
import { api, startTestApp, type ClientCredentials, type TestApp } from '../support/test-app.js';

function tamper(token: string): string {
  const [header, payload, signature] = token.split('.');
  const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString());
  claims.scope = 'admin';
  return `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${signature}`;
}

for (const dialect of testDialects()) {
  describe(`bearer authentication on protected routes (RFC 6750) [${dialect}]`, () => {
    let t: TestApp;
    let client: ClientCredentials;
    before(async () => {
      t = await startTestApp(dialect);
      client = await t.createClientAccount('bearer-co', ['subscriptions:read', 'requests:read']);
    });
    after(() => t.close());

    const invalidToken = async (token: string, reason: RegExp) => {
      const response = await api(t.url, 'GET', '/v2/me', { token });
      assert.equal(response.status, 401);
      assert.match(response.headers.get('www-authenticate') ?? '', /^Bearer realm="rewards", error="invalid_token"/);
      assert.match(response.headers.get('www-authenticate') ?? '', reason);
      assert.equal(response.headers.get('content-type'), 'application/problem+json; charset=utf-8');
      assert.equal(response.body.status, 401);
    };

    it('a valid token reaches the route under /v1 and /v2 with its account and scopes', async () => {
      const token = await t.token(client, 'requests:read');
      for (const version of ['v1', 'v2']) {
        const response = await api(t.url, 'GET', `/${version}/me`, { token });
        assert.equal(response.status, 200);
        assert.deepEqual(response.body, { clientId: client.clientId, accountId: client.accountId, accountName: 'bearer-co', scopes: ['requests:read'] });
      }
    });

    it('no token → 401 with a bare Bearer challenge', async () => {
      const response = await api(t.url, 'GET', '/v2/me');
      assert.equal(response.status, 401);
      assert.equal(response.headers.get('www-authenticate'), 'Bearer realm="rewards"');
      assert.equal(response.body.title, 'Unauthorized');
    });

    it('another scheme is treated as no bearer token', async () => {
      const response = await api(t.url, 'GET', '/v2/me', { headers: { authorization: 'Basic Zm9vOmJhcg==' } });
      assert.equal(response.status, 401);
      assert.equal(response.headers.get('www-authenticate'), 'Bearer realm="rewards"');
    });

    it('expired token → invalid_token', async () => {
      const past = new AccessTokens(t.deps.keys, t.config.publicUrl, 60_000, () => Date.now() - 3_600_000);
      await invalidToken(await past.issue({ clientId: client.clientId, accountId: client.accountId, scopes: ['requests:read'] }), /expired/);
    });

    it('tampered token (payload changed, signature kept) → invalid_token', async () => {
      await invalidToken(tamper(await t.token(client)), /invalid/);
    });

    it('alg "none" token → invalid_token', async () => {
      const real = await t.token(client);
      const kid = JSON.parse(Buffer.from(real.split('.')[0]!, 'base64url').toString()).kid;
      const header = Buffer.from(JSON.stringify({ alg: 'none', typ: 'at+jwt', kid })).toString('base64url');
      await invalidToken(`${header}.${real.split('.')[1]}.`, /unsupported token algorithm|malformed/);
    });

    it('token signed by an unknown key (unknown kid) → invalid_token', async () => {
      const { privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
      const forged = await new SignJWT({ client_id: client.clientId, account_id: client.accountId, scope: 'admin' })
        .setProtectedHeader({ alg: 'EdDSA', typ: 'at+jwt', kid: 'attacker-key' })
        .setIssuer(t.config.publicUrl)
        .setAudience(t.config.publicUrl)
        .setSubject(client.clientId)
        .setIssuedAt()
        .setExpirationTime('5m')
        .setJti('x')
        .sign(privateKey);
      await invalidToken(forged, /unknown signing key/);
    });

    it('a token for another issuer/audience or of another type → invalid_token', async () => {
      const foreignIssuer = new AccessTokens(t.deps.keys, 'https://elsewhere.example', 60_000);
      await invalidToken(await foreignIssuer.issue({ clientId: client.clientId, accountId: client.accountId, scopes: [] }), /invalid/);
      await invalidToken('not-a-jwt', /malformed/);
    });

    it('missing scope → 403 insufficient_scope naming the scope', async () => {
      const token = await t.token(client, 'requests:read');
      const response = await api(t.url, 'GET', '/v2/subscriptions', { token });
      assert.equal(response.status, 403);
      assert.equal(response.headers.get('www-authenticate'), 'Bearer realm="rewards", error="insufficient_scope", error_description="requires subscriptions:read", scope="subscriptions:read"');
      assert.equal(response.body.status, 403);
      const allowed = await api(t.url, 'GET', '/v2/subscriptions', { token: await t.token(client, 'subscriptions:read') });
      assert.equal(allowed.status, 200);
    });
  });
}
