// needs: database
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { testDialects } from '../support/databases.js';
import { api, startTestApp, type TestApp } from '../support/test-app.js';

async function requestToken(base: string, clientId: string, clientSecret: string, scope: string) {
  const response = await fetch(`${base}/v2/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret, scope }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

for (const dialect of testDialects()) {
  describe(`admin accounts and clients [${dialect}]`, () => {
    let t: TestApp;
    let admin: string;
    before(async () => {
      t = await startTestApp(dialect);
      admin = await t.token(t.operator);
    });
    after(() => t.close());

    describe('accounts', () => {
      it('creates, lists, reads and renames an account; v1 serves the same routes', async () => {
        const created = await api(t.url, 'POST', '/v2/admin/accounts', { token: admin, body: { name: 'acme' } });
        assert.equal(created.status, 201);
        assert.match(created.body.id, /^acc_/);
        assert.deepEqual({ ...created.body, id: undefined, createdAt: undefined }, { id: undefined, name: 'acme', active: true, isOperator: false, createdAt: undefined });
        assert.equal(created.headers.get('location'), `/v2/admin/accounts/${created.body.id}`);

        const list = await api(t.url, 'GET', '/v1/admin/accounts', { token: admin });
        assert.equal(list.status, 200);
        assert.deepEqual(
          list.body.map((a: any) => a.name),
          ['operator', 'acme'],
        );
        assert.equal(list.body[0].isOperator, true);

        const one = await api(t.url, 'GET', `/v2/admin/accounts/${created.body.id}`, { token: admin });
        assert.deepEqual(one.body, created.body);

        const renamed = await api(t.url, 'PATCH', `/v2/admin/accounts/${created.body.id}`, { token: admin, body: { name: 'acme-corp' } });
        assert.equal(renamed.status, 200);
        assert.equal(renamed.body.name, 'acme-corp');
        assert.equal(renamed.body.active, true);
      });

      it('a duplicate name is 409, on create and on rename', async () => {
        await api(t.url, 'POST', '/v2/admin/accounts', { token: admin, body: { name: 'dup' } });
        const again = await api(t.url, 'POST', '/v2/admin/accounts', { token: admin, body: { name: 'dup' } });
        assert.equal(again.status, 409);
        assert.equal(again.headers.get('content-type'), 'application/problem+json; charset=utf-8');
        const other = await api(t.url, 'POST', '/v2/admin/accounts', { token: admin, body: { name: 'other' } });
        const rename = await api(t.url, 'PATCH', `/v2/admin/accounts/${other.body.id}`, { token: admin, body: { name: 'dup' } });
        assert.equal(rename.status, 409);
      });

      it('invalid bodies are 400 with field paths', async () => {
        const missing = await api(t.url, 'POST', '/v2/admin/accounts', { token: admin, body: {} });
        assert.equal(missing.status, 400);
        assert.deepEqual(
          missing.body.errors.map((e: any) => e.path),
          ['body.name'],
        );
        const blank = await api(t.url, 'POST', '/v2/admin/accounts', { token: admin, body: { name: '   ' } });
        assert.equal(blank.status, 400);
        assert.deepEqual(
          blank.body.errors.map((e: any) => e.path),
          ['body.name'],
        );
        const notBoolean = await api(t.url, 'PATCH', `/v2/admin/accounts/${t.operator.accountId}`, { token: admin, body: { active: 'false' } });
        assert.equal(notBoolean.status, 400);
        assert.deepEqual(
          notBoolean.body.errors.map((e: any) => e.path),
          ['body.active'],
        );
        const unknown = await api(t.url, 'POST', '/v2/admin/accounts', { token: admin, body: { name: 'x', plan: 'gold' } });
        assert.equal(unknown.status, 400);
      });

      it('an unknown account is 404', async () => {
        assert.equal((await api(t.url, 'GET', '/v2/admin/accounts/acc_nope', { token: admin })).status, 404);
        assert.equal((await api(t.url, 'PATCH', '/v2/admin/accounts/acc_nope', { token: admin, body: { active: false } })).status, 404);
        assert.equal((await api(t.url, 'GET', '/v2/admin/accounts/acc_nope/clients', { token: admin })).status, 404);
      });

      it('the operator account cannot be deactivated', async () => {
        const response = await api(t.url, 'PATCH', `/v2/admin/accounts/${t.operator.accountId}`, { token: admin, body: { active: false } });
        assert.equal(response.status, 409);
        assert.equal((await api(t.url, 'GET', '/v2/admin/accounts', { token: admin })).status, 200);
      });

      it('deactivating an account makes its clients get invalid_client; reactivating restores them', async () => {
        const client = await t.createClientAccount();
        assert.equal((await requestToken(t.url, client.clientId, client.clientSecret, 'events:read')).status, 200);
        const off = await api(t.url, 'PATCH', `/v2/admin/accounts/${client.accountId}`, { token: admin, body: { active: false } });
        assert.equal(off.status, 200);
        assert.equal(off.body.active, false);
        const refused = await requestToken(t.url, client.clientId, client.clientSecret, 'events:read');
        assert.equal(refused.status, 401);
        assert.equal(refused.body.error, 'invalid_client');
        await api(t.url, 'PATCH', `/v2/admin/accounts/${client.accountId}`, { token: admin, body: { active: true } });
        assert.equal((await requestToken(t.url, client.clientId, client.clientSecret, 'events:read')).status, 200);
      });

      it('a token without the admin scope gets 403 on every admin route; no token gets 401', async () => {
        const client = await t.createClientAccount();
        const token = await t.token(client);
        for (const [method, path] of [
          ['GET', '/v2/admin/accounts'],
          ['POST', '/v2/admin/accounts'],
          ['GET', `/v2/admin/accounts/${client.accountId}`],
          ['PATCH', `/v2/admin/accounts/${client.accountId}`],
          ['GET', `/v2/admin/accounts/${client.accountId}/clients`],
          ['POST', `/v2/admin/accounts/${client.accountId}/clients`],
          ['POST', `/v2/admin/accounts/${client.accountId}/clients/${client.clientId}/rotate-secret`],
          ['PATCH', `/v2/admin/accounts/${client.accountId}/clients/${client.clientId}`],
          ['DELETE', `/v2/admin/accounts/${client.accountId}/clients/${client.clientId}`],
        ]) {
          const response = await api(t.url, method!, path!, { token, body: method === 'GET' || method === 'DELETE' ? undefined : {} });
          assert.equal(response.status, 403, `${method} ${path}`);
          assert.match(response.headers.get('www-authenticate')!, /insufficient_scope/);
        }
        assert.equal((await api(t.url, 'GET', '/v2/admin/accounts')).status, 401);
        // An operator token narrowed to other scopes is not an admin token either.
        const narrowed = await t.token(t.operator, 'events:read');
        assert.equal((await api(t.url, 'GET', '/v2/admin/accounts', { token: narrowed })).status, 403);
      });
    });

    it('the admin routes are documented in the OpenAPI document', async () => {
      const doc = (await api(t.url, 'GET', '/openapi.json')).body;
      for (const path of ['/v2/admin/accounts', '/v2/admin/accounts/{id}/clients', '/v1/admin/experiences/{id}']) assert.ok(doc.paths[path], path);
      assert.ok(doc.paths['/v2/admin/experiences'].post.parameters.some((p: any) => p.name === 'accountId' && p.in === 'query'));
    });

    describe('clients', () => {
      it('creates a client whose secret works once shown, lists it without secrets', async () => {
        const account = (await api(t.url, 'POST', '/v2/admin/accounts', { token: admin, body: { name: 'shop' } })).body;
        const created = await api(t.url, 'POST', `/v2/admin/accounts/${account.id}/clients`, { token: admin, body: { scopes: ['events:read', 'requests:write'] } });
        assert.equal(created.status, 201);
        assert.equal(created.headers.get('cache-control'), 'no-store');
        assert.deepEqual(Object.keys(created.body).sort(), ['accountId', 'client_id', 'client_secret', 'scopes']);
        assert.equal(created.body.accountId, account.id);
        assert.equal(created.body.scopes, 'events:read requests:write');
        assert.match(created.body.client_secret, /^rrs_cs_/);
        const token = await requestToken(t.url, created.body.client_id, created.body.client_secret, 'events:read');
        assert.equal(token.status, 200);

        const defaults = await api(t.url, 'POST', `/v2/admin/accounts/${account.id}/clients`, { token: admin });
        assert.equal(defaults.status, 201);
        assert.equal(defaults.body.scopes.split(' ').includes('admin'), false);
        const spaced = await api(t.url, 'POST', `/v2/admin/accounts/${account.id}/clients`, { token: admin, body: { scopes: 'events:read  events:write' } });
        assert.equal(spaced.body.scopes, 'events:read events:write');

        const list = await api(t.url, 'GET', `/v2/admin/accounts/${account.id}/clients`, { token: admin });
        assert.equal(list.status, 200);
        assert.deepEqual(
          list.body.map((c: any) => c.client_id),
          [created.body.client_id, defaults.body.client_id, spaced.body.client_id],
        );
        const text = JSON.stringify(list.body);
        assert.ok(!text.includes(created.body.client_secret) && !/secret_hash|secretHash|client_secret/.test(text));
        assert.equal(list.body[0].active, true);
        assert.equal(list.body[0].previous_secret_valid_until, null);
      });

      it('bad scopes are 400 at body.scopes; admin only for operator-account clients', async () => {
        const client = await t.createClientAccount();
        const path = `/v2/admin/accounts/${client.accountId}/clients`;
        for (const scopes of [['events:read', 'root'], 'nonsense', ['admin'], [], 42]) {
          const response = await api(t.url, 'POST', path, { token: admin, body: { scopes } });
          assert.equal(response.status, 400, JSON.stringify(scopes));
          assert.equal(response.body.errors[0].path, 'body.scopes');
        }
        const operatorClient = await api(t.url, 'POST', `/v2/admin/accounts/${t.operator.accountId}/clients`, { token: admin, body: { scopes: ['admin'] } });
        assert.equal(operatorClient.status, 201);
      });

      it('an unknown scope names the scope most likely meant, a comma-separated list the separator, and every scope', async () => {
        const client = await t.createClientAccount();
        const path = `/v2/admin/accounts/${client.accountId}/clients`;
        const every = 'the scopes are subscriptions:read subscriptions:write requests:read requests:write events:read events:write admin';
        const expectations: Array<[unknown, string]> = [
          [['request:write', 'events:read'], `unknown scope: request:write (did you mean requests:write?); ${every}`],
          ['request:write events:red', `unknown scopes: request:write (did you mean requests:write?), events:red (did you mean events:read?); ${every}`],
          ['requests:write,events:read', `scopes are separated by spaces, not commas: send "requests:write events:read"; ${every}`],
          [['root'], `unknown scope: root; ${every}`],
        ];
        for (const [scopes, message] of expectations) {
          const response = await api(t.url, 'POST', path, { token: admin, body: { scopes } });
          assert.equal(response.status, 400, JSON.stringify(scopes));
          assert.deepEqual(response.body.errors, [{ path: 'body.scopes', message }], JSON.stringify(scopes));
        }
        const patched = await api(t.url, 'PATCH', `${path}/${client.clientId}`, { token: admin, body: { scopes: 'subscription:read' } });
        assert.deepEqual(patched.body.errors, [{ path: 'body.scopes', message: `unknown scope: subscription:read (did you mean subscriptions:read?); ${every}` }]);
      });

      it('rotates a secret: both secrets work during the grace period', async () => {
        const client = await t.createClientAccount();
        const rotated = await api(t.url, 'POST', `/v2/admin/accounts/${client.accountId}/clients/${client.clientId}/rotate-secret`, { token: admin });
        assert.equal(rotated.status, 200);
        assert.equal(rotated.headers.get('cache-control'), 'no-store');
        assert.equal(rotated.body.client_id, client.clientId);
        assert.notEqual(rotated.body.client_secret, client.clientSecret);
        const graceMs = Date.parse(rotated.body.previous_secret_valid_until) - Date.now();
        assert.ok(graceMs > 23 * 3_600_000 && graceMs <= 24 * 3_600_000);
        assert.equal((await requestToken(t.url, client.clientId, rotated.body.client_secret, 'events:read')).status, 200);
        assert.equal((await requestToken(t.url, client.clientId, client.clientSecret, 'events:read')).status, 200);
      });

      it('PATCH deactivates a client (invalid_client) and changes its scopes', async () => {
        const client = await t.createClientAccount();
        const path = `/v2/admin/accounts/${client.accountId}/clients/${client.clientId}`;
        const narrowed = await api(t.url, 'PATCH', path, { token: admin, body: { scopes: 'events:read' } });
        assert.equal(narrowed.status, 200);
        assert.equal(narrowed.body.scopes, 'events:read');
        assert.equal((await requestToken(t.url, client.clientId, client.clientSecret, 'events:write')).body.error, 'invalid_scope');
        const off = await api(t.url, 'PATCH', path, { token: admin, body: { active: false } });
        assert.equal(off.body.active, false);
        assert.equal((await requestToken(t.url, client.clientId, client.clientSecret, 'events:read')).body.error, 'invalid_client');
        const bad = await api(t.url, 'PATCH', path, { token: admin, body: { active: 1 } });
        assert.equal(bad.status, 400);
        assert.deepEqual(
          bad.body.errors.map((e: any) => e.path),
          ['body.active'],
        );
      });

      it('DELETE removes a client; its credentials stop working', async () => {
        const client = await t.createClientAccount();
        const path = `/v2/admin/accounts/${client.accountId}/clients/${client.clientId}`;
        assert.equal((await api(t.url, 'DELETE', path, { token: admin })).status, 204);
        assert.equal((await api(t.url, 'DELETE', path, { token: admin })).status, 404);
        assert.equal((await requestToken(t.url, client.clientId, client.clientSecret, 'events:read')).body.error, 'invalid_client');
      });

      it("another account's client under the wrong account path is a 404 and is left untouched", async () => {
        const owner = await t.createClientAccount();
        const stranger = await t.createClientAccount();
        const path = `/v2/admin/accounts/${stranger.accountId}/clients/${owner.clientId}`;
        assert.equal((await api(t.url, 'PATCH', path, { token: admin, body: { active: false } })).status, 404);
        assert.equal((await api(t.url, 'POST', `${path}/rotate-secret`, { token: admin })).status, 404);
        assert.equal((await api(t.url, 'DELETE', path, { token: admin })).status, 404);
        assert.equal((await requestToken(t.url, owner.clientId, owner.clientSecret, 'events:read')).status, 200);
        assert.equal((await api(t.url, 'POST', '/v2/admin/accounts/acc_nope/clients', { token: admin, body: {} })).status, 404);
      });
    });
  });
}
