import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { testDialects } from '../support/databases.js';
import { api, startTestApp, type ClientCredentials, type TestApp } from '../support/test-app.js';

const body = {
  event: 'registered-request',
  description: 'owned by A',
  experiences: ['a-campaign'],
  callback: { url: 'http://127.0.0.1:9/a', authorization: { Bearer: 'account-a-token-0000' } },
};

for (const dialect of testDialects()) {
  describe(`subscriptions tenant isolation [${dialect}]`, () => {
    let t: TestApp;
    let a: ClientCredentials;
    let tokenA: string;
    let tokenB: string;
    let subA: { _id: string; secret: string };
    before(async () => {
      t = await startTestApp(dialect);
      a = await t.createClientAccount('account-a');
      tokenA = await t.token(a);
      tokenB = await t.token(await t.createClientAccount('account-b'));
      subA = (await api(t.url, 'POST', '/v2/subscriptions', { token: tokenA, body })).body;
    });
    after(() => t.close());

    const foreignRoutes = (id: string, query = '') =>
      [
        ['GET', `/v2/subscriptions/${id}${query}`],
        ['PUT', `/v2/subscriptions/${id}${query}`],
        ['DELETE', `/v2/subscriptions/${id}${query}`],
        ['GET', `/v2/subscriptions/${id}/secret${query}`],
        ['POST', `/v2/subscriptions/${id}/secret/rotate${query}`],
        ['GET', `/v1/subscriptions/${id}${query}`],
        ['PUT', `/v1/subscriptions/${id}${query}`],
        ['DELETE', `/v1/subscriptions/${id}${query}`],
      ] as const;

    it('another account’s subscription is a 404 on every route, exactly like an unknown one', async () => {
      for (const [method, path] of foreignRoutes(subA._id)) {
        const response = await api(t.url, method, path, { token: tokenB, body: method === 'PUT' ? { description: 'taken over' } : undefined });
        assert.equal(response.status, 404, `${method} ${path}`);
        const unknown = await api(t.url, method, path.replace(subA._id, 'sub_00000000000000000000000000'), { token: tokenB, body: method === 'PUT' ? { description: 'x' } : undefined });
        assert.deepEqual(response.body, unknown.body, `${method} ${path}`);
      }
    });

    it('asking for another account with ?accountId= is a 404 for a client that is not an operator', async () => {
      for (const [method, path] of [
        ...foreignRoutes(subA._id, `?accountId=${a.accountId}`),
        ['GET', `/v2/subscriptions?accountId=${a.accountId}`],
        ['GET', `/v2/signing-secret?accountId=${a.accountId}`],
      ] as const) {
        const response = await api(t.url, method, path, { token: tokenB, body: method === 'PUT' ? { description: 'x' } : undefined });
        assert.equal(response.status, 404, `${method} ${path}`);
      }
    });

    it('lists show only the caller’s subscriptions', async () => {
      const own = await api(t.url, 'POST', '/v2/subscriptions', { token: tokenB, body: { ...body, description: 'owned by B' } });
      const listB = (await api(t.url, 'GET', '/v2/subscriptions', { token: tokenB })).body as { _id: string }[];
      assert.deepEqual(
        listB.map((s) => s._id),
        [own.body._id],
      );
      const listA = (await api(t.url, 'GET', '/v2/subscriptions?event=registered-request', { token: tokenA })).body as { _id: string }[];
      assert.equal(
        listA.some((s) => s._id === own.body._id),
        false,
      );
      assert.ok(listA.some((s) => s._id === subA._id));
    });

    it('the other account’s attempts changed nothing: A’s subscription and secret are intact', async () => {
      const read = await api(t.url, 'GET', `/v2/subscriptions/${subA._id}`, { token: tokenA });
      assert.equal(read.status, 200);
      assert.equal(read.body.description, 'owned by A');
      assert.deepEqual(read.body.callback.authorization, { Bearer: '****0000' });
      assert.equal((await api(t.url, 'GET', `/v2/subscriptions/${subA._id}/secret`, { token: tokenA })).body.secret, subA.secret);
    });

    it('each account has its own default signing secret', async () => {
      const secretA = (await api(t.url, 'GET', '/v2/signing-secret', { token: tokenA })).body.secret;
      const secretB = (await api(t.url, 'GET', '/v2/signing-secret', { token: tokenB })).body.secret;
      assert.notEqual(secretA, secretB);
      await api(t.url, 'POST', '/v2/signing-secret/rotate', { token: tokenB });
      assert.equal((await api(t.url, 'GET', '/v2/signing-secret', { token: tokenA })).body.secret, secretA);
    });
  });
}
