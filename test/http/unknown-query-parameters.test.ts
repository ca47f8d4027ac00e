// needs: database
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { buildOpsApp } from '../../src/ops-app.js';
import { testDialects } from '../support/databases.js';
import { api, startTestApp, type RegisteredRoute, type TestApp } from '../support/test-app.js';

/**
 * A query parameter a route does not take is a 400 naming it, on every route the app registers
 * (src/http/query-parameters.ts): walked over the app's own route table, so a new route is
 * covered the day it is added. `?account=` (for `?accountId=`) used to answer 200 with the
 * operator's own list; now it is refused with the name meant.
 */

/**
 * The routes that take any query parameter, on purpose: the pages a browser loads (the console,
 * whose client-side router keeps its filters in the query string, and the API reference page),
 * and the token endpoint (RFC 6749 §3.2: its URI may carry a query component; it reads the body
 * only). Said here again, not imported: a route added to that list shows up as a failure below.
 */
const isPage = (url: string) => url === '/console' || url.startsWith('/console/') || url === '/docs' || url.startsWith('/docs/');
const isToken = (url: string) => url === '/v1/oauth/token' || url === '/v2/oauth/token';
const isFree = (url: string) => isPage(url) || isToken(url);

/** A body its schema accepts, where the route requires one: a refused body would answer before the query string is checked. */
const VALID_BODIES: Record<string, unknown> = {
  'POST /subscriptions': { event: 'registered-request', callback: { url: 'http://127.0.0.1:9/hook' } },
  'PUT /subscriptions/:subscriptionId': { description: 'changed' },
  'POST /subscriptions/:subscriptionId/recover': { since: '2024-07-01T00:00:00Z' },
  'POST /requests': { experience: 'summer' },
  'POST /request/:id/events': { name: 'pedido-entregue', refId: 'partner-1' },
  'POST /admin/accounts': { name: 'never-created' },
  'PATCH /admin/accounts/:id': { active: true },
  'PATCH /admin/accounts/:id/clients/:clientId': { active: true },
  'POST /admin/experiences': { name: 'never-created', title: 'Never created' },
  'PUT /admin/experiences/:id': { title: 'Changed' },
  'POST /listen-sessions/:sessionId/deliveries/:notificationId/result': { statusCode: 204, latencyMs: 12 },
};

const keyOf = (route: RegisteredRoute) => `${route.method} ${route.url.replace(/^\/v[12]/, '')}`;
/** The route's path with made-up ids: the query string is refused before any id is looked up. */
const pathOf = (route: RegisteredRoute) => route.url.replace(/:(\w+)/g, 'x_unknown').replace(/\*$/, 'index.html');

for (const dialect of testDialects()) {
  describe(`unknown query parameters are a 400 naming them, on every route [${dialect}]`, () => {
    let t: TestApp;
    let operatorToken: string;
    const checked = () => t.routes.filter((route) => !isFree(route.url));

    before(async () => {
      t = await startTestApp(dialect);
      operatorToken = await t.token(t.operator);
    });
    after(() => t.close());

    /** The route called with `query`, as its callers call it: the operator's token (every scope) and a valid body. */
    const call = (route: RegisteredRoute, query: string) => {
      const body = VALID_BODIES[keyOf(route)];
      return api(t.url, route.method, `${pathOf(route)}?${query}`, {
        ...(route.scope ? { token: operatorToken } : {}),
        ...(route.method === 'GET' || route.method === 'DELETE' ? {} : { body: body ?? {} }),
      });
    };

    /** What the 400 says of the parameter `name`: the message of the error at `querystring.<name>`. */
    function refused(route: RegisteredRoute, response: { status: number; body: any }, name: string): string {
      const where = `${route.method} ${route.url}?${name}=…`;
      assert.equal(response.status, 400, `${where}: ${JSON.stringify(response.body)}`);
      const fault = response.body.errors?.find((e: { path: string }) => e.path === `querystring.${name}`);
      assert.ok(fault, `${where}: no error names querystring.${name}: ${JSON.stringify(response.body)}`);
      assert.match(response.body.detail, new RegExp(`querystring\\.${name} `), where);
      return fault.message;
    }

    it('the route table holds every kind of route; only the browser pages and the token endpoint take any parameter', () => {
      const urls = new Set(t.routes.map((route) => route.url));
      for (const url of ['/health/live', '/health/ready', '/metrics', '/.well-known/jwks.json', '/openapi.json', '/v2/me', '/v1/subscriptions', '/v2/delivery-policy']) {
        assert.ok(
          checked().some((route) => route.url === url),
          `${url} is not checked`,
        );
      }
      for (const url of ['/v1/oauth/token', '/v2/oauth/token', '/console/*', '/docs']) {
        assert.ok(urls.has(url), `${url} is not in the route table`);
      }
      assert.ok(checked().length > 80, `only ${checked().length} routes checked`);
    });

    it('every route refuses a parameter it does not take, naming it and what it takes', async () => {
      for (const route of checked()) {
        const message = refused(route, await call(route, 'unknownThing=1'), 'unknownThing');
        assert.match(message, /is not a known parameter; this route takes (no query parameters|[a-zA-Z, ]+)/, `${route.method} ${route.url}`);
        // A protected route takes accountId (the operator acts for an account with it): the message lists it.
        if (route.scope) assert.match(message, /accountId/, `${route.method} ${route.url}`);
      }
    });

    it('?account= (for ?accountId=) is refused on every route, with the name meant on a protected one', async () => {
      for (const route of checked()) {
        const message = refused(route, await call(route, `account=${t.operator.accountId}`), 'account');
        if (route.scope) assert.match(message, /did you mean accountId\?/, `${route.method} ${route.url}: ${message}`);
      }
      // What the issue saw: the operator's own list, answered 200, for another account's.
      const other = await t.createClientAccount('other-account');
      const listed = await api(t.url, 'GET', `/v2/subscriptions?account=${other.accountId}`, { token: operatorToken });
      assert.equal(listed.status, 400);
      assert.deepEqual(listed.body.errors, [{ path: 'querystring.account', message: 'is not a known parameter; did you mean accountId?' }]);
      assert.equal(listed.body.detail, 'request querystring is invalid: querystring.account is not a known parameter; did you mean accountId?');
      assert.equal((await api(t.url, 'GET', `/v2/subscriptions?accountId=${other.accountId}`, { token: operatorToken })).status, 200);
    });

    it('every parameter at fault is named, each with the one most likely meant', async () => {
      const response = await api(t.url, 'GET', '/v2/notifications?stauts=failed&subscription=sub_1&limit=5&page=2', { token: operatorToken });
      assert.equal(response.status, 400);
      assert.deepEqual(response.body.errors, [
        { path: 'querystring.stauts', message: 'is not a known parameter; did you mean status?' },
        { path: 'querystring.subscription', message: 'is not a known parameter; did you mean subscriptionId?' },
        { path: 'querystring.page', message: 'is not a known parameter; this route takes requestId, subscriptionId, status, event, since, until, listen, limit, cursor, accountId' },
      ]);
      assert.equal(response.body.detail, 'request querystring is invalid: querystring.stauts, querystring.subscription and querystring.page are not known parameters');
    });

    it('the parameters a route takes are still taken, accountId on every protected route', async () => {
      assert.equal((await api(t.url, 'GET', '/v2/notifications?status=failed&limit=5', { token: operatorToken })).status, 200);
      assert.equal((await api(t.url, 'GET', `/v2/me?accountId=${t.operator.accountId}`, { token: operatorToken })).status, 200);
      assert.equal((await api(t.url, 'GET', `/v2/delivery-policy?accountId=${t.operator.accountId}`, { token: operatorToken })).status, 200);
      // An empty query string names no parameter.
      assert.equal((await api(t.url, 'GET', '/health/live?', {})).status, 200);
    });

    it("the worker's operations port (METRICS_PORT) refuses them too, as the API's /health and /metrics do", async () => {
      const ops = await buildOpsApp(t.deps);
      try {
        for (const url of ['/health/live', '/health/ready', '/metrics']) {
          const response = await ops.inject({ method: 'GET', url: `${url}?verbose=1` });
          assert.equal(response.statusCode, 400, url);
          assert.deepEqual(response.json().errors, [{ path: 'querystring.verbose', message: 'is not a known parameter; this route takes no query parameters' }], url);
          assert.equal((await ops.inject({ method: 'GET', url })).statusCode, 200, url);
        }
      } finally {
        await ops.close();
      }
    });

    it('the browser pages take any query parameter (the console keeps its own filters there)', async () => {
      for (const route of t.routes.filter((r) => isPage(r.url))) {
        const response = await fetch(`${t.url}${pathOf(route)}?status=failed&anything=1`, { redirect: 'manual' });
        await response.arrayBuffer();
        assert.notEqual(response.status, 400, `${route.method} ${route.url}`);
      }
    });

    it('the token endpoint takes a query string (RFC 6749 §3.2) and reads its parameters from the body only', async () => {
      const post = (query: string, form: Record<string, string>) =>
        fetch(`${t.url}/v2/oauth/token?${query}`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(form) });
      const form = { grant_type: 'client_credentials', client_id: t.operator.clientId, client_secret: t.operator.clientSecret, scope: 'admin' };
      const issued = await post('tenant=acme', form);
      assert.equal(issued.status, 200);
      assert.equal(((await issued.json()) as { scope: string }).scope, 'admin');
      // A credential in the query string is not read: the body lacks it, and the answer says so.
      const { client_secret: secret, ...withoutSecret } = form;
      const refusedToken = await post(`client_secret=${encodeURIComponent(secret)}`, withoutSecret);
      assert.equal(refusedToken.status, 400);
      assert.equal(((await refusedToken.json()) as { error: string }).error, 'invalid_request');
    });
  });
}
