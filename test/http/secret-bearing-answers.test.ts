// needs: database
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { testDialects } from '../support/databases.js';
import { api, startTestApp, type ClientCredentials, type RegisteredRoute, type TestApp } from '../support/test-app.js';

/**
 * Every answer that carries a secret says `Cache-Control: no-store` (and `Pragma: no-cache`).
 * Walked over the app's own route table, so a new route cannot forget it: a route whose success
 * schema can hold a secret must declare `config.secretBearing`, and every such route is called
 * here and its answer's headers checked.
 *
 * "Can hold a secret", decided on the schema: a top-level member named like a credential, or an
 * example (every JSON answer documents one, `npm test -- openapi-examples`) holding a value in
 * one of the service's secret formats: client secrets `rrs_cs_`, signing secrets `whsec_`, a
 * console link's code (`#link=`), an access token (a JWT, `eyJ`).
 */
const SECRET_MEMBERS = new Set(['secret', 'secrets', 'client_secret', 'access_token', 'refresh_token', 'password', 'code']);
const SECRET_FORMATS = /whsec_|rrs_cs_|rrs_cl_|#link=|^eyJ[\w-]+\./;

/** Routes that set the headers themselves: the token endpoints (RFC 6749 §5.1; every answer, on the server's fast path too). */
const SETS_NO_STORE_ITSELF = new Set(['POST /v1/oauth/token', 'POST /v2/oauth/token']);

function examplesHoldSecret(value: unknown, inExamples = false): boolean {
  if (typeof value === 'string') return inExamples && SECRET_FORMATS.test(value);
  if (Array.isArray(value)) return value.some((item) => examplesHoldSecret(item, inExamples));
  if (value === null || typeof value !== 'object') return false;
  return Object.entries(value).some(([key, member]) => examplesHoldSecret(member, inExamples || key === 'examples' || key === 'example'));
}

function canHoldSecret(route: RegisteredRoute): boolean {
  return Object.entries(route.response ?? {}).some(([status, schema]) => {
    if (!/^2/.test(status) || schema === null || typeof schema !== 'object') return false;
    const members = Object.keys((schema as { properties?: object }).properties ?? {});
    return members.some((name) => SECRET_MEMBERS.has(name)) || examplesHoldSecret(schema);
  });
}

const key = (route: RegisteredRoute) => `${route.method} ${route.url}`;
const unversioned = (route: RegisteredRoute) => `${route.method} ${route.url.replace(/^\/v[12]/, '')}`;

for (const dialect of testDialects()) {
  describe(`answers that carry a secret are never cached [${dialect}]`, () => {
    let t: TestApp;
    let client: ClientCredentials;
    let token: string;
    let operatorToken: string;
    let subscriptionId: string;
    before(async () => {
      t = await startTestApp(dialect);
      client = await t.createClientAccount();
      token = await t.token(client);
      operatorToken = await t.token(t.operator, 'admin');
      const created = await api(t.url, 'POST', '/v2/subscriptions', { token, body: { event: 'registered-request', callback: { url: 'http://127.0.0.1:9/hook' } } });
      subscriptionId = created.body._id;
    });
    after(() => t.close());

    /** How to call each secret-bearing route so that it succeeds; a new one fails the walk until it is added here. */
    const CALLS: Record<string, (version: 'v1' | 'v2') => Promise<{ status: number; headers: Headers; body: unknown }>> = {
      'POST /subscriptions': (v) => api(t.url, 'POST', `/${v}/subscriptions`, { token, body: { event: 'processed-request', callback: { url: 'http://127.0.0.1:9/hook' } } }),
      'GET /subscriptions/:subscriptionId/secret': (v) => api(t.url, 'GET', `/${v}/subscriptions/${subscriptionId}/secret`, { token }),
      'POST /subscriptions/:subscriptionId/secret/rotate': (v) => api(t.url, 'POST', `/${v}/subscriptions/${subscriptionId}/secret/rotate`, { token }),
      'GET /signing-secret': (v) => api(t.url, 'GET', `/${v}/signing-secret`, { token }),
      'POST /signing-secret/rotate': (v) => api(t.url, 'POST', `/${v}/signing-secret/rotate`, { token }),
      // rewards listen: the secrets the forwarded deliveries are signed with.
      'POST /listen-sessions': (v) => api(t.url, 'POST', `/${v}/listen-sessions`, { token, body: {} }),
      'POST /admin/accounts/:id/clients': (v) => api(t.url, 'POST', `/${v}/admin/accounts/${client.accountId}/clients`, { token: operatorToken, body: { scopes: ['requests:read'] } }),
      'POST /admin/accounts/:id/clients/:clientId/rotate-secret': async (v) => {
        const other = await t.createClientAccount();
        return api(t.url, 'POST', `/${v}/admin/accounts/${other.accountId}/clients/${other.clientId}/rotate-secret`, { token: operatorToken });
      },
      'POST /admin/accounts/:id/console-links': (v) => api(t.url, 'POST', `/${v}/admin/accounts/${client.accountId}/console-links`, { token: operatorToken, body: {} }),
      'POST /oauth/token': (v) =>
        v === 'v2'
          ? api(t.url, 'POST', '/v2/oauth/token', {
              headers: { 'content-type': 'application/x-www-form-urlencoded' },
              body: new URLSearchParams({ grant_type: 'client_credentials', client_id: client.clientId, client_secret: client.clientSecret, scope: 'requests:read' }).toString(),
            })
          : api(t.url, 'POST', '/v1/oauth/token', { body: { client_id: client.clientId, client_secret: client.clientSecret } }),
    };

    it('every route whose answer can hold a secret declares config.secretBearing', () => {
      const holding = t.routes.filter(canHoldSecret);
      const undeclared = holding.filter((route) => !route.secretBearing && !SETS_NO_STORE_ITSELF.has(key(route))).map(key);
      assert.deepEqual(undeclared, [], 'routes that can answer a secret without Cache-Control: no-store (add config: { secretBearing: true })');
      // The criterion itself: it must see the secrets the service is known to hand out.
      assert.deepEqual([...new Set(holding.map(unversioned))].sort(), Object.keys(CALLS).sort());
    });

    it('every secret-bearing route, called, answers its secret with Cache-Control: no-store and Pragma: no-cache', async () => {
      const routes = t.routes.filter((route) => route.secretBearing || SETS_NO_STORE_ITSELF.has(key(route)));
      assert.ok(routes.length >= 2 * Object.keys(CALLS).length, 'each under /v1 and /v2');
      for (const route of routes) {
        const call = CALLS[unversioned(route)];
        assert.ok(call, `${key(route)} has no call here: add one to CALLS`);
        const answer = await call(route.url.startsWith('/v1') ? 'v1' : 'v2');
        assert.ok(answer.status >= 200 && answer.status < 300, `${key(route)}: ${answer.status} ${JSON.stringify(answer.body)}`);
        assert.match(JSON.stringify(answer.body), /whsec_|rrs_cs_|#link=|"access_token":"eyJ/, `${key(route)} answered no secret`);
        assert.equal(answer.headers.get('cache-control'), 'no-store', key(route));
        assert.equal(answer.headers.get('pragma'), 'no-cache', key(route));
      }
    });

    it('the OpenAPI document says so for those answers', async () => {
      const document = (await api(t.url, 'GET', '/openapi.json')).body as { paths: Record<string, Record<string, { responses: Record<string, { headers?: Record<string, unknown> }> }>> };
      const declared = t.routes.filter((r) => r.secretBearing);
      assert.ok(declared.length >= 2 * (Object.keys(CALLS).length - 1), 'every secret-bearing route but the token endpoints, under /v1 and /v2');
      for (const route of declared) {
        const path = route.url.replace(/:(\w+)/g, '{$1}');
        const responses = document.paths[path]![route.method.toLowerCase()]!.responses;
        const success = Object.entries(responses).filter(([status]) => /^2/.test(status));
        assert.ok(success.length > 0 && success.every(([, response]) => response.headers?.['Cache-Control']), `${key(route)} documents Cache-Control`);
      }
    });
  });
}
