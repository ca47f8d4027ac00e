// needs: database
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { testDialects } from '../support/databases.js';
import { api, startTestApp, type ClientCredentials, type TestApp } from '../support/test-app.js';

/**
 * Input the fuzzer (test/fuzz/routes.fuzz.test.ts) found answered with a 5xx or a non-problem body;
 * each case here failed before its fix.
 */
for (const dialect of testDialects()) {
  describe(`odd input at the edges [${dialect}]`, () => {
    let t: TestApp;
    let client: ClientCredentials;
    let token: string;
    before(async () => {
      t = await startTestApp(dialect);
      client = await t.createClientAccount();
      token = await t.token(client);
    });
    after(() => t.close());

    const isProblem = (response: { status: number; headers: Headers; body: any }, status: number, detail: RegExp) => {
      assert.equal(response.status, status, JSON.stringify(response.body));
      assert.match(String(response.headers.get('content-type')), /^application\/problem\+json/);
      assert.match(response.body.detail, detail);
    };

    it('a NUL character in the URL is a 400 (PostgreSQL refused it in a query: 500)', async () => {
      isProblem(await api(t.url, 'GET', '/v2/subscriptions/a%00b', { token }), 400, /URL must not contain the NUL character/);
      isProblem(await api(t.url, 'GET', '/v2/notifications?requestId=%00', { token }), 400, /NUL/);
    });

    it('a NUL character in a JSON string is a 400, and nothing is stored', async () => {
      const operator = await t.token(t.operator, 'admin');
      const accounts = async () => (await t.deps.db.selectFrom('accounts').select('id').execute()).length;
      const before = await accounts();
      isProblem(await api(t.url, 'POST', '/v2/admin/accounts', { token: operator, body: '{"name":"a\\u0000b"}' }), 400, /request body must not contain the NUL character/);
      assert.equal(await accounts(), before);
      // An escaped backslash before u0000 is text, not a NUL: accepted.
      const text = await api(t.url, 'POST', '/v2/admin/accounts', { token: operator, body: '{"name":"a\\\\u0000b"}' });
      assert.equal(text.status, 201, JSON.stringify(text.body));
      assert.equal(text.body.name, 'a\\u0000b');
    });

    it('a NUL character in a token request is invalid_request (RFC 6749), on the fast path and the Fastify route', async () => {
      for (const url of [`${t.url}/v2/oauth/token`, `${t.url}/v2/oauth/token?x=1`]) {
        const response = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: `grant_type=client_credentials&client_id=${encodeURIComponent(client.clientId)}%00&client_secret=x&scope=requests:read`,
        });
        assert.equal(response.status, 400);
        assert.deepEqual(await response.json(), { error: 'invalid_request', error_description: 'parameter "client_id" must not contain the NUL character (U+0000)' });
      }
      const inUrl = await fetch(`${t.url}/v1/oauth/token?unknown=%00`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
      assert.equal(inUrl.status, 400);
      assert.equal(((await inUrl.json()) as { error: string }).error, 'invalid_request');
    });

    it('a URL whose percent-encoding is not UTF-8 is a 400 problem document', async () => {
      isProblem(await api(t.url, 'GET', '/v2/subscriptions/%C3%28', { token }), 400, /percent-encoding is not UTF-8/);
    });

    it("an empty subscription id in the path is a 404; it never rotates the account's own signing secret", async () => {
      const before = (await api(t.url, 'GET', '/v2/signing-secret', { token })).body;
      isProblem(await api(t.url, 'POST', '/v2/subscriptions//secret/rotate', { token }), 404, /subscription not found/);
      assert.deepEqual((await api(t.url, 'GET', '/v2/signing-secret', { token })).body, before);
    });
  });
}
