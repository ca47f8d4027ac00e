// needs: database
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { testDialects } from '../support/databases.js';
import { api, startTestApp, type TestApp } from '../support/test-app.js';

/**
 * What a new user's slips get back: a path one edit away from a route names the route, `/` says
 * where to go, a malformed JSON body says where it breaks. Over real HTTP, as a client sees it.
 */
for (const dialect of testDialects()) {
  describe(`near misses [${dialect}]`, () => {
    let t: TestApp;
    let token: string;
    before(async () => {
      t = await startTestApp(dialect);
      token = await t.token(await t.createClientAccount());
    });
    after(() => t.close());

    const notFound = (detail: string) => ({ type: 'https://rewards.dev/problems/not-found', title: 'Not Found', status: 404, detail });

    it('a path one slip away from a route names the route, as the contract spells it', async () => {
      const cases: Array<[string, string, string]> = [
        ['GET', '/v2/requests/req_123/events', 'no route for GET /v2/requests/req_123/events; did you mean GET /v2/request/{id}/events?'],
        ['POST', '/v2/requests/req_123/events', 'no route for POST /v2/requests/req_123/events; did you mean POST /v2/request/{id}/events?'],
        ['GET', '/v2/subscription', 'no route for GET /v2/subscription; did you mean GET /v2/subscriptions?'],
        ['GET', '/v2/subscriptons/sub_1', 'no route for GET /v2/subscriptons/sub_1; did you mean GET /v2/subscriptions/{subscriptionId}?'],
        ['GET', '/v2/Requests', 'no route for GET /v2/Requests; did you mean GET /v2/requests?'],
        ['GET', '/v2/notification/ntf_1?x=1', 'no route for GET /v2/notification/ntf_1; did you mean GET /v2/notifications/{notificationId}?'],
      ];
      for (const [method, path, detail] of cases) {
        const response = await api(t.url, method, path, { token });
        assert.equal(response.status, 404, `${method} ${path}`);
        assert.match(response.headers.get('content-type') ?? '', /^application\/problem\+json/);
        assert.deepEqual(response.body, notFound(detail), `${method} ${path}`);
      }
    });

    it('a path that exists for other methods names them; a path near nothing gets no guess', async () => {
      const patch = await api(t.url, 'PATCH', '/v2/subscriptions/sub_1', { token, body: {} });
      assert.deepEqual(patch.body, notFound('no route for PATCH /v2/subscriptions/sub_1; this path takes GET, PUT, DELETE'));
      const far = await api(t.url, 'GET', '/v2/wallets/w_1/balance', { token });
      assert.deepEqual(far.body, notFound('no route for GET /v2/wallets/w_1/balance'));
      // Two segments off (a typo and a missing plural) is too far to guess.
      const twoOff = await api(t.url, 'GET', '/v2/reqests/req_1/event', { token });
      assert.deepEqual(twoOff.body, notFound('no route for GET /v2/reqests/req_1/event'));
    });

    it('an unknown resource id on a real route is the route’s own 404, with no hint', async () => {
      const unknown = await api(t.url, 'GET', '/v2/request/req_unknown/events', { token });
      assert.equal(unknown.status, 404);
      assert.doesNotMatch(unknown.body.detail, /did you mean|no route/);
      const subscription = await api(t.url, 'GET', '/v2/subscriptions/sub_unknown', { token });
      assert.equal(subscription.status, 404);
      assert.doesNotMatch(subscription.body.detail, /did you mean|no route/);
    });

    it('GET / answers 200 with where to go: the console, the API reference, the contract', async () => {
      const root = await api(t.url, 'GET', '/');
      assert.equal(root.status, 200);
      assert.match(root.headers.get('content-type') ?? '', /^application\/json/);
      assert.deepEqual(root.body, { name: 'Reward Request Service', console: '/console/', docs: '/docs', openapi: '/openapi.json', token: '/v2/oauth/token' });
      for (const link of [root.body.docs, root.body.openapi]) assert.equal((await fetch(`${t.url}${link}`, { redirect: 'manual' })).status < 400, true, link);
      const post = await api(t.url, 'POST', '/', { body: {} });
      assert.deepEqual(post.body, notFound('no route for POST /'));
    });

    it('a malformed JSON body is a 400 saying where it breaks, by line and column', async () => {
      const cases: Array<[string, string]> = [
        ['{"event":', 'request body is not valid JSON: the body ends early at line 1, column 10'],
        ['{"event": "registered-request",}', "request body is not valid JSON: unexpected '}' where a member name in double quotes belongs at line 1, column 32"],
        ['{\n  "event": "registered-request"\n  "callback": {}\n}', "request body is not valid JSON: unexpected '\"' where ',' or '}' belongs at line 3, column 3"],
        ["{'event': 'registered-request'}", "request body is not valid JSON: unexpected ''' where a member name in double quotes belongs at line 1, column 2"],
        ['{"event": "a\nb"}', 'request body is not valid JSON: control character U+000A inside a string (escape it) at line 1, column 13'],
        ['{"event": "x"} trailing', "request body is not valid JSON: unexpected 't' after the JSON value at line 1, column 16"],
      ];
      for (const [body, detail] of cases) {
        const response = await api(t.url, 'POST', '/v2/subscriptions', { token, body, headers: { 'content-type': 'application/json' } });
        assert.equal(response.status, 400, body);
        assert.equal(response.body.detail, detail, body);
      }
      const proto = await api(t.url, 'POST', '/v2/subscriptions', { token, body: '{"__proto__": {"admin": true}}', headers: { 'content-type': 'application/json' } });
      assert.equal(proto.status, 400);
      assert.equal(proto.body.detail, 'request body is refused: a member named __proto__, or constructor holding prototype, is not accepted');
    });
  });
}
