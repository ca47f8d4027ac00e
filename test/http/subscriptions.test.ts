// needs: database
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { testDialects } from '../support/databases.js';
import { api, startTestApp, type ClientCredentials, type TestApp } from '../support/test-app.js';

const BASIC = Buffer.from('shop-user:correct horse battery').toString('base64');
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/** The seed's sample create: callback {url, authorization}, event, description, experiences. */
const seedCreate = {
  callback: { url: 'http://127.0.0.1:9/webhooks/registered', authorization: { Bearer: 'client-issued-token-0001' } },
  event: 'registered-request',
  description: 'Registered requests of the summer campaign',
  experiences: ['summer-campaign'],
};
/** The seed's sample update: callback, description, experiences; no event. */
const seedUpdate = {
  callback: { url: 'http://127.0.0.1:9/webhooks/v2/registered', authorization: { Basic: BASIC } },
  description: 'Registered requests, all campaigns',
  experiences: [],
};

for (const dialect of testDialects()) {
  describe(`subscriptions API [${dialect}]`, () => {
    let t: TestApp;
    let client: ClientCredentials;
    let token: string;
    before(async () => {
      t = await startTestApp(dialect);
      client = await t.createClientAccount();
      token = await t.token(client, 'subscriptions:read subscriptions:write');
    });
    after(() => t.close());

    it('creates the seed sample and returns it with _id, accountId, masked secret and signing secret', async () => {
      const created = await api(t.url, 'POST', '/v2/subscriptions', { token, body: seedCreate });
      assert.equal(created.status, 201);
      const { _id, secret, createdAt, updatedAt, ...rest } = created.body;
      assert.match(_id, /^sub_[0-9a-z]{26}$/);
      assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
      assert.equal(Buffer.from(secret.slice('whsec_'.length), 'base64').length, 32);
      assert.match(createdAt, ISO);
      assert.equal(updatedAt, createdAt);
      assert.deepEqual(rest, {
        accountId: client.accountId,
        event: 'registered-request',
        description: seedCreate.description,
        active: true,
        experiences: ['summer-campaign'],
        callback: { url: seedCreate.callback.url, authorization: { Bearer: '****0001' }, customHeaders: {} },
      });
      assert.equal(created.headers.get('location'), `/v2/subscriptions/${_id}`);

      const read = await api(t.url, 'GET', `/v2/subscriptions/${_id}`, { token });
      assert.equal(read.status, 200);
      assert.deepEqual(read.body, { ...rest, _id, createdAt, updatedAt });
    });

    it('applies the seed sample update, which omits event: event and active are kept', async () => {
      const created = (await api(t.url, 'POST', '/v2/subscriptions', { token, body: { ...seedCreate, event: 'processed-requests', active: false } })).body;
      const updated = await api(t.url, 'PUT', `/v2/subscriptions/${created._id}`, { token, body: seedUpdate });
      assert.equal(updated.status, 200);
      assert.equal(updated.body._id, created._id);
      assert.equal(updated.body.event, 'processed-request');
      assert.equal(updated.body.active, false);
      assert.equal(updated.body.description, seedUpdate.description);
      assert.deepEqual(updated.body.experiences, []);
      assert.deepEqual(updated.body.callback, { url: seedUpdate.callback.url, authorization: { Basic: `****${BASIC.slice(-4)}` }, customHeaders: {} });
      assert.equal(updated.body.createdAt, created.createdAt);
      assert.ok(updated.body.updatedAt >= created.updatedAt);
      assert.deepEqual((await api(t.url, 'GET', `/v2/subscriptions/${created._id}`, { token })).body, updated.body);
    });

    it('a PUT replaces the members it carries and keeps the others; {} changes nothing', async () => {
      const created = (
        await api(t.url, 'POST', '/v2/subscriptions', {
          token,
          body: { ...seedCreate, callback: { ...seedCreate.callback, customHeaders: { 'X-Shop': 'one' } } },
        })
      ).body;
      const deactivated = await api(t.url, 'PUT', `/v2/subscriptions/${created._id}`, { token, body: { active: false } });
      assert.equal(deactivated.body.active, false);
      assert.deepEqual(deactivated.body.callback, created.callback);
      assert.equal(deactivated.body.description, created.description);

      const unchanged = await api(t.url, 'PUT', `/v2/subscriptions/${created._id}`, { token, body: {} });
      assert.equal(unchanged.status, 200);
      const { updatedAt: _a, ...before } = deactivated.body;
      const { updatedAt: _b, ...after } = unchanged.body;
      assert.deepEqual(after, before);

      // callback is one member: given without authorization or headers, it has none afterwards.
      const replaced = await api(t.url, 'PUT', `/v2/subscriptions/${created._id}`, { token, body: { callback: { url: 'http://127.0.0.1:9/plain' } } });
      assert.deepEqual(replaced.body.callback, { url: 'http://127.0.0.1:9/plain', customHeaders: {} });
    });

    it('accepts every authorization form of the seed, and none', async () => {
      const oauth2 = { client_id: 'cid', client_secret: 'oauth-client-secret-7777', url: 'http://127.0.0.1:9/token', audience: 'https://client.example.com' };
      const forms: [unknown, unknown][] = [
        [{ Basic: BASIC }, { Basic: `****${BASIC.slice(-4)}` }],
        [{ Basic: `Basic ${BASIC}` }, { Basic: `****${BASIC.slice(-4)}` }],
        [{ Bearer: 'Bearer eyJhbGciOi.eyJzdWIi.c2lnbmF0dXJl' }, { Bearer: '****dXJl' }],
        [{ oauth2 }, { oauth2: { ...oauth2, client_secret: '****7777' } }],
        [{ mtls: { twoFactor: { oauth2 } } }, { mtls: { twoFactor: { oauth2: { ...oauth2, client_secret: '****7777' } } } }],
        [{ mtls: {} }, { mtls: {} }],
        [
          { mtls: {}, Bearer: 'token-with-mtls-1234' },
          { mtls: {}, Bearer: '****1234' },
        ],
      ];
      for (const [authorization, masked] of forms) {
        const response = await api(t.url, 'POST', '/v2/subscriptions', { token, body: { event: 'processed-request', callback: { url: 'http://127.0.0.1:9/h', authorization } } });
        assert.equal(response.status, 201, JSON.stringify(authorization));
        assert.deepEqual(response.body.callback.authorization, masked);
      }
      for (const none of [undefined, null, {}]) {
        const response = await api(t.url, 'POST', '/v2/subscriptions', { token, body: { event: 'processed-request', callback: { url: 'http://127.0.0.1:9/h', authorization: none } } });
        assert.equal(response.status, 201);
        assert.equal('authorization' in response.body.callback, false);
      }
    });

    it('stores the plural event names in the singular and fills the defaults', async () => {
      const response = await api(t.url, 'POST', '/v2/subscriptions', { token, body: { event: 'registered-requests', callback: { url: 'https://203.0.113.1/x' } } });
      assert.equal(response.status, 201);
      assert.equal(response.body.event, 'registered-request');
      assert.equal(response.body.description, '');
      assert.equal(response.body.active, true);
      assert.deepEqual(response.body.experiences, []);
    });

    it('lists the account’s subscriptions, filtered by event, experience and active, the same under /v1', async () => {
      const account = await t.createClientAccount();
      const own = await t.token(account);
      const make = (body: object) => api(t.url, 'POST', '/v2/subscriptions', { token: own, body: { callback: { url: 'http://127.0.0.1:9/h' }, ...body } });
      const a = (await make({ event: 'registered-request', experiences: ['x', 'y'] })).body._id;
      const b = (await make({ event: 'processed-requests', experiences: ['x'], active: false })).body._id;
      const c = (await make({ event: 'processed-request' })).body._id;
      const ids = async (query: string, version = 'v2') => {
        const response = await api(t.url, 'GET', `/${version}/subscriptions${query}`, { token: own });
        assert.equal(response.status, 200);
        return response.body.map((s: { _id: string }) => s._id);
      };
      assert.deepEqual(await ids(''), [a, b, c]);
      assert.deepEqual(await ids('', 'v1'), [a, b, c]);
      assert.deepEqual(await ids('?event=processed-request'), [b, c]);
      assert.deepEqual(await ids('?event=processed-requests'), [b, c]);
      assert.deepEqual(await ids('?experience=x'), [a, b]);
      assert.deepEqual(await ids('?active=false'), [b]);
      assert.deepEqual(await ids('?active=true&event=processed-request'), [c]);
      assert.deepEqual(await ids('?experience=nowhere'), []);
    });

    it('serves every route under /v1 as under /v2', async () => {
      const created = await api(t.url, 'POST', '/v1/subscriptions', { token, body: seedCreate });
      assert.equal(created.status, 201);
      assert.equal(created.headers.get('location'), `/v1/subscriptions/${created.body._id}`);
      assert.equal((await api(t.url, 'PUT', `/v1/subscriptions/${created.body._id}`, { token, body: { description: 'v1' } })).body.description, 'v1');
      assert.equal((await api(t.url, 'GET', `/v2/subscriptions/${created.body._id}`, { token })).body.description, 'v1');
      assert.equal((await api(t.url, 'GET', `/v1/subscriptions/${created.body._id}/secret`, { token })).body.secret, created.body.secret);
      assert.equal((await api(t.url, 'DELETE', `/v1/subscriptions/${created.body._id}`, { token })).status, 204);
    });

    it('deletes a subscription: 204, then 404 everywhere and gone from the list', async () => {
      const created = (await api(t.url, 'POST', '/v2/subscriptions', { token, body: seedCreate })).body;
      const deleted = await api(t.url, 'DELETE', `/v2/subscriptions/${created._id}`, { token });
      assert.equal(deleted.status, 204);
      assert.equal(deleted.body, undefined);
      for (const [method, path] of [
        ['GET', `/v2/subscriptions/${created._id}`],
        ['PUT', `/v2/subscriptions/${created._id}`],
        ['DELETE', `/v2/subscriptions/${created._id}`],
        ['GET', `/v2/subscriptions/${created._id}/secret`],
      ] as const) {
        const response = await api(t.url, method, path, { token, body: method === 'PUT' ? {} : undefined });
        assert.equal(response.status, 404, `${method} ${path}`);
        assert.equal(response.body.detail, 'subscription not found');
      }
      const list = (await api(t.url, 'GET', '/v2/subscriptions', { token })).body as { _id: string }[];
      assert.equal(
        list.some((s) => s._id === created._id),
        false,
      );
      const secrets = await t.deps.db.selectFrom('webhook_signing_secrets').select('id').where('subscription_id', '=', created._id).execute();
      assert.deepEqual(secrets, []);
    });

    it('allows at most 100 subscriptions per account: the 101st is a 409', async () => {
      const account = await t.createClientAccount();
      const own = await t.token(account);
      for (let i = 0; i < 100; i++) {
        const response = await api(t.url, 'POST', '/v2/subscriptions', { token: own, body: { event: 'registered-request', callback: { url: `http://127.0.0.1:9/${i}` } } });
        assert.equal(response.status, 201);
      }
      const over = await api(t.url, 'POST', '/v2/subscriptions', { token: own, body: { event: 'registered-request', callback: { url: 'http://127.0.0.1:9/101' } } });
      assert.equal(over.status, 409);
      assert.equal(over.headers.get('content-type'), 'application/problem+json; charset=utf-8');
      assert.deepEqual(over.body, {
        type: 'https://rewards.dev/problems/conflict',
        title: 'Conflict',
        status: 409,
        detail: 'an account can have at most 100 subscriptions; delete one first',
      });
      const first = (await api(t.url, 'GET', '/v2/subscriptions', { token: own })).body[0]._id;
      assert.equal((await api(t.url, 'DELETE', `/v2/subscriptions/${first}`, { token: own })).status, 204);
      assert.equal((await api(t.url, 'POST', '/v2/subscriptions', { token: own, body: { event: 'registered-request', callback: { url: 'http://127.0.0.1:9/again' } } })).status, 201);
    });

    it('concurrent creates cannot pass the 100 limit', async () => {
      const account = await t.createClientAccount();
      const own = await t.token(account);
      const create = (i: number) => api(t.url, 'POST', '/v2/subscriptions', { token: own, body: { event: 'processed-request', callback: { url: `http://127.0.0.1:9/${i}` } } });
      for (let i = 0; i < 97; i++) assert.equal((await create(i)).status, 201);
      const racing = await Promise.all(Array.from({ length: 8 }, (_, i) => create(100 + i)));
      assert.deepEqual(racing.map((r) => r.status).sort(), [201, 201, 201, 409, 409, 409, 409, 409]);
      assert.equal((await api(t.url, 'GET', '/v2/subscriptions', { token: own })).body.length, 100);
    });

    it('an operator manages any account’s subscriptions with ?accountId=', async () => {
      const account = await t.createClientAccount();
      const own = await t.token(account);
      const operator = await t.token(t.operator, 'admin');
      const created = await api(t.url, 'POST', `/v2/subscriptions?accountId=${account.accountId}`, { token: operator, body: seedCreate });
      assert.equal(created.status, 201);
      assert.equal(created.body.accountId, account.accountId);
      assert.deepEqual(
        (await api(t.url, 'GET', '/v2/subscriptions', { token: own })).body.map((s: { _id: string }) => s._id),
        [created.body._id],
      );
      const path = `/v2/subscriptions/${created.body._id}?accountId=${account.accountId}`;
      assert.equal((await api(t.url, 'PUT', path, { token: operator, body: { active: false } })).body.active, false);
      assert.equal((await api(t.url, 'GET', `/v2/subscriptions/${created.body._id}`, { token: operator })).status, 404, 'without accountId the operator acts for its own account');
      assert.equal((await api(t.url, 'DELETE', path, { token: operator })).status, 204);
    });

    it('requires subscriptions:read to read and subscriptions:write to change', async () => {
      const readOnly = await t.token(client, 'subscriptions:read');
      const writeOnly = await t.token(client, 'subscriptions:write');
      const created = (await api(t.url, 'POST', '/v2/subscriptions', { token: writeOnly, body: seedCreate })).body;
      assert.equal((await api(t.url, 'GET', '/v2/subscriptions', { token: writeOnly })).status, 403);
      assert.equal((await api(t.url, 'GET', `/v2/subscriptions/${created._id}`, { token: readOnly })).status, 200);
      for (const [method, path] of [
        ['POST', '/v2/subscriptions'],
        ['PUT', `/v2/subscriptions/${created._id}`],
        ['DELETE', `/v2/subscriptions/${created._id}`],
        ['POST', `/v2/subscriptions/${created._id}/secret/rotate`],
        ['POST', '/v2/signing-secret/rotate'],
      ] as const) {
        const response = await api(t.url, method, path, { token: readOnly, body: method === 'PUT' || path === '/v2/subscriptions' ? seedCreate : undefined });
        assert.equal(response.status, 403, `${method} ${path}`);
        assert.match(response.headers.get('www-authenticate') ?? '', /error="insufficient_scope"/);
      }
      assert.equal((await api(t.url, 'GET', '/v2/subscriptions')).status, 401);
    });
  });
}
