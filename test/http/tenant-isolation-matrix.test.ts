// needs: database
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { SCOPES } from '../../src/domain/tokens/scopes.js';
import { insertNotifications, newNotificationRow } from '../../src/storage/repositories/notifications.js';
import { testDialects } from '../support/databases.js';
import { insertExperience } from '../support/experiences.js';
import { api, startTestApp, type ClientCredentials, type RegisteredRoute, type TestApp } from '../support/test-app.js';

/**
 * Tenant isolation, walked over the app's own route table: every protected route, under /v1 and
 * /v2, with no token, a bad token, a token lacking the route's scope, account A's token on account
 * B's resources, A's token asking for `?accountId=B`, and the operator with and without
 * `?accountId=`. A route nobody classified below fails the test, so a new route cannot be added
 * without saying how it treats tenants.
 */

type Resource = 'subscription' | 'request' | 'notification' | 'listen-session';
/** How a protected route meets tenants. */
type Kind =
  | { resource: Resource } // acts on one resource of the caller's account, named in the path
  | { account: true } // acts on the caller's own account (lists, creation, the account's secret)
  | { admin: true }; // operator only (scope admin): sees every account by design

const CLASSIFIED: Record<string, Kind> = {
  'GET /me': { account: true },
  'GET /subscriptions': { account: true },
  'POST /subscriptions': { account: true },
  'GET /subscriptions/:subscriptionId': { resource: 'subscription' },
  'PUT /subscriptions/:subscriptionId': { resource: 'subscription' },
  'DELETE /subscriptions/:subscriptionId': { resource: 'subscription' },
  'GET /subscriptions/:subscriptionId/secret': { resource: 'subscription' },
  'POST /subscriptions/:subscriptionId/secret/rotate': { resource: 'subscription' },
  'POST /subscriptions/:subscriptionId/test': { resource: 'subscription' },
  'POST /subscriptions/:subscriptionId/recover': { resource: 'subscription' },
  'GET /subscriptions/:subscriptionId/stats': { resource: 'subscription' },
  'GET /signing-secret': { account: true },
  'POST /signing-secret/rotate': { account: true },
  'POST /requests': { account: true },
  'GET /requests': { account: true },
  'GET /requests/:id': { resource: 'request' },
  'GET /request/:id/events': { resource: 'request' },
  'POST /request/:id/events': { resource: 'request' },
  'GET /notifications': { account: true },
  'GET /notifications/:notificationId': { resource: 'notification' },
  'POST /notifications/:notificationId/retry': { resource: 'notification' },
  // The same for every account (the deployment's settings); an operator may still name one with ?accountId=.
  'GET /delivery-policy': { account: true },
  'POST /listen-sessions': { account: true },
  'GET /listen-sessions/:sessionId/deliveries': { resource: 'listen-session' },
  'POST /listen-sessions/:sessionId/deliveries/:notificationId/result': { resource: 'listen-session' },
  'DELETE /listen-sessions/:sessionId': { resource: 'listen-session' },
  'GET /admin/accounts': { admin: true },
  'POST /admin/accounts': { admin: true },
  'GET /admin/accounts/:id': { admin: true },
  'PATCH /admin/accounts/:id': { admin: true },
  'GET /admin/accounts/:id/clients': { admin: true },
  'POST /admin/accounts/:id/clients': { admin: true },
  'POST /admin/accounts/:id/clients/:clientId/rotate-secret': { admin: true },
  'PATCH /admin/accounts/:id/clients/:clientId': { admin: true },
  'DELETE /admin/accounts/:id/clients/:clientId': { admin: true },
  'POST /admin/accounts/:id/console-links': { admin: true },
  'GET /admin/accounts/:id/console-links': { admin: true },
  'DELETE /admin/accounts/:id/console-links/:linkId': { admin: true },
  'GET /admin/experiences': { admin: true },
  'POST /admin/experiences': { admin: true },
  'GET /admin/experiences/:id': { admin: true },
  'PUT /admin/experiences/:id': { admin: true },
  'DELETE /admin/experiences/:id': { admin: true },
};

/** Routes without a bearer token, on purpose. */
const PUBLIC = new Set(['POST /v1/oauth/token', 'POST /v2/oauth/token', 'GET /health/live', 'GET /health/ready', 'GET /metrics', 'GET /.well-known/jwks.json', 'GET /openapi.json']);
// The console's files (docs/console.md): the page is public, everything it shows comes from the API with the user's token.
const isPublic = (route: RegisteredRoute) => PUBLIC.has(`${route.method} ${route.url}`) || route.url.startsWith('/docs') || route.url === '/console' || route.url === '/console/*';

interface Tenant {
  client: ClientCredentials;
  token: string;
  ids: Record<Resource, string>;
}

for (const dialect of testDialects()) {
  describe(`tenant isolation matrix, every protected route [${dialect}]`, () => {
    let t: TestApp;
    let a: Tenant;
    let b: Tenant;
    let operatorToken: string;
    /** A token of account A lacking exactly that scope. */
    const lacking = new Map<string, string>();
    const protectedRoutes = () => t.routes.filter((route) => !isPublic(route));

    async function tenant(name: string): Promise<Tenant> {
      const client = await t.createClientAccount(name);
      const token = await t.token(client);
      await insertExperience(t.deps.db, client.accountId, { name: 'summer', prizes: [{ value: 5, stock: null }] });
      const subscription = await api(t.url, 'POST', '/v2/subscriptions', { token, body: { event: 'registered-request', callback: { url: 'http://127.0.0.1:9/hook' } } });
      assert.equal(subscription.status, 201);
      const request = await api(t.url, 'POST', '/v2/requests', { token, body: { experience: 'summer' } });
      assert.equal(request.status, 202);
      const notification = newNotificationRow(
        { accountId: client.accountId, requestId: request.body.id, subscriptionId: subscription.body._id, event: 'registered-requests', url: 'http://127.0.0.1:9/hook', payload: '{}' },
        Date.now(),
      );
      await insertNotifications(t.deps.db, [notification]);
      const listenSession = await api(t.url, 'POST', '/v2/listen-sessions', { token, body: {} });
      assert.equal(listenSession.status, 201);
      return { client, token, ids: { subscription: subscription.body._id, request: request.body.id, notification: notification.id, 'listen-session': listenSession.body.id } };
    }

    /** B's state as its own token sees it: must not change whatever A sends. */
    async function snapshotOfB() {
      const read = async (path: string) => (await api(t.url, 'GET', path, { token: b.token })).body;
      return {
        subscription: await read(`/v2/subscriptions/${b.ids.subscription}`),
        subscriptionSecret: await read(`/v2/subscriptions/${b.ids.subscription}/secret`),
        signingSecret: await read('/v2/signing-secret'),
        request: await read(`/v2/requests/${b.ids.request}`),
        events: await read(`/v2/request/${b.ids.request}/events`),
        notification: await read(`/v2/notifications/${b.ids.notification}`),
      };
    }

    before(async () => {
      t = await startTestApp(dialect);
      a = await tenant('tenant-a');
      b = await tenant('tenant-b');
      operatorToken = await t.token(t.operator, 'admin');
      for (const scope of SCOPES) {
        const client = await t.createClientAccount(
          undefined,
          SCOPES.filter((s) => s !== scope && s !== 'admin'),
        );
        lacking.set(scope, await t.token(client));
      }
    });
    after(() => t.close());

    it('every registered route is either public on purpose or classified here, and declares a scope', () => {
      for (const route of protectedRoutes()) {
        const key = `${route.method} ${route.url.replace(/^\/v[12]/, '')}`;
        assert.ok(CLASSIFIED[key], `${route.method} ${route.url} is not classified for tenant isolation (add it to CLASSIFIED)`);
        assert.ok(route.scope, `${route.method} ${route.url} declares no scope`);
      }
      assert.ok(protectedRoutes().length >= 2 * Object.keys(CLASSIFIED).length, 'every classified route exists under /v1 and /v2');
    });

    /** The route's path with `ids` filled in (admin routes get A's account and an unknown client). */
    const pathOf = (route: RegisteredRoute, ids: Record<Resource, string>, accountId: string) =>
      route.url
        .replace(':subscriptionId', ids.subscription)
        .replace(':notificationId', ids.notification)
        .replace(':sessionId', ids['listen-session'])
        .replace(':clientId', 'cli_unknown')
        .replace(':linkId', 'cln_unknown')
        .replace(':id', route.url.includes('/admin/') ? accountId : ids.request);
    /** A valid body where the route takes one, so that a foreign id, not the body, decides the answer. */
    const VALID_BODIES: Record<string, unknown> = {
      'PUT /subscriptions/:subscriptionId': { description: 'changed by another account?' },
      'POST /request/:id/events': { name: 'pedido-entregue', refId: 'partner-1' },
      'POST /subscriptions/:subscriptionId/recover': { since: new Date(Date.now() - 3_600_000).toISOString() },
      'POST /listen-sessions/:sessionId/deliveries/:notificationId/result': { statusCode: 204, latencyMs: 1 },
    };
    const call = (route: RegisteredRoute, path: string, token?: string) =>
      api(t.url, route.method, path, {
        ...(token ? { token } : {}),
        ...(route.method === 'GET' || route.method === 'DELETE' ? {} : { body: VALID_BODIES[`${route.method} ${route.url.replace(/^\/v[12]/, '')}`] ?? {} }),
      });

    it('no token is 401 with a bare Bearer challenge; a bad token is 401 invalid_token', async () => {
      const forged = `${a.token.slice(0, a.token.lastIndexOf('.'))}.${Buffer.alloc(64).toString('base64url')}`;
      for (const route of protectedRoutes()) {
        const path = pathOf(route, a.ids, a.client.accountId);
        const anonymous = await call(route, path);
        assert.equal(anonymous.status, 401, `${route.method} ${path} without a token`);
        assert.equal(anonymous.headers.get('www-authenticate'), 'Bearer realm="rewards"');
        const bad = await call(route, path, forged);
        assert.equal(bad.status, 401, `${route.method} ${path} with a forged token`);
        assert.match(String(bad.headers.get('www-authenticate')), /error="invalid_token"/);
      }
    });

    it('a token lacking the route scope is 403 insufficient_scope naming it', async () => {
      for (const route of protectedRoutes()) {
        if (route.scope === 'authenticated') continue;
        const path = pathOf(route, a.ids, a.client.accountId);
        const response = await call(route, path, lacking.get(route.scope!));
        assert.equal(response.status, 403, `${route.method} ${path} without ${route.scope}`);
        assert.match(String(response.headers.get('www-authenticate')), new RegExp(`error="insufficient_scope".*scope="${route.scope}"`));
      }
    });

    it("account A reaching B's resources gets 404, by id or by ?accountId=; B's state is unchanged", async () => {
      const before = await snapshotOfB();
      for (const route of protectedRoutes()) {
        const kind = CLASSIFIED[`${route.method} ${route.url.replace(/^\/v[12]/, '')}`]!;
        if ('admin' in kind) continue;
        if ('resource' in kind) {
          const path = pathOf(route, b.ids, b.client.accountId);
          const foreign = await call(route, path, a.token);
          assert.equal(foreign.status, 404, `A: ${route.method} ${path} (B's ${kind.resource})`);
          assert.match(String(foreign.headers.get('content-type')), /^application\/problem\+json/);
          const unknownIds = { subscription: 'sub_unknown', request: 'req_unknown', notification: 'msg_unknown', 'listen-session': 'lsn_unknown' };
          const unknown = await call(route, pathOf(route, unknownIds, a.client.accountId), a.token);
          assert.equal(unknown.status, 404, `A: ${route.method} ${route.url} with an unknown id`);
          // The same answer but for the id it names: nothing tells that the resource exists.
          const withoutIds = (body: unknown, ids: Record<Resource, string>) => Object.values(ids).reduce((text, id) => text.replaceAll(id, '<id>'), JSON.stringify(body));
          assert.equal(withoutIds(foreign.body, b.ids), withoutIds(unknown.body, unknownIds), `A: ${route.method} ${path}: another account's resource answers as an unknown one`);
        }
        const actingForB = await call(route, `${pathOf(route, a.ids, a.client.accountId)}?accountId=${b.client.accountId}`, a.token);
        assert.equal(actingForB.status, 404, `A: ${route.method} ${route.url}?accountId=B`);
      }
      assert.deepEqual(await snapshotOfB(), before);
    });

    it("A's lists hold none of B's resources", async () => {
      const subscriptions = (await api(t.url, 'GET', '/v2/subscriptions', { token: a.token })).body;
      assert.deepEqual(
        subscriptions.map((s: { _id: string }) => s._id),
        [a.ids.subscription],
      );
      const notifications = (await api(t.url, 'GET', '/v2/notifications', { token: a.token })).body.data;
      assert.deepEqual(
        notifications.map((n: { id: string }) => n.id),
        [a.ids.notification],
      );
      const requests = (await api(t.url, 'GET', '/v2/requests', { token: a.token })).body.data;
      assert.deepEqual(
        requests.map((r: { id: string }) => r.id),
        [a.ids.request],
      );
    });

    it('each account has its own default signing secret; rotating one leaves the other', async () => {
      const secretA = (await api(t.url, 'GET', '/v2/signing-secret', { token: a.token })).body.secret;
      const secretB = (await api(t.url, 'GET', '/v2/signing-secret', { token: b.token })).body.secret;
      assert.notEqual(secretA, secretB);
      await api(t.url, 'POST', '/v2/signing-secret/rotate', { token: b.token });
      assert.equal((await api(t.url, 'GET', '/v2/signing-secret', { token: a.token })).body.secret, secretA);
    });

    it("the operator reaches B's resources only with ?accountId=B", async () => {
      for (const route of protectedRoutes()) {
        const kind = CLASSIFIED[`${route.method} ${route.url.replace(/^\/v[12]/, '')}`]!;
        if (!('resource' in kind) || route.method !== 'GET') continue;
        const path = pathOf(route, b.ids, b.client.accountId);
        assert.equal((await call(route, path, operatorToken)).status, 404, `operator: ${route.method} ${path} without ?accountId=`);
        assert.equal((await call(route, `${path}?accountId=${b.client.accountId}`, operatorToken)).status, 200, `operator: ${route.method} ${path}?accountId=B`);
      }
      const unknownAccount = await api(t.url, 'GET', '/v2/subscriptions?accountId=acc_unknown', { token: operatorToken });
      assert.equal(unknownAccount.status, 404);
    });
  });
}
