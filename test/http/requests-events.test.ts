// needs: database
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { JobWorker } from '../../src/worker/job-worker.js';
import { startWorker } from '../../src/worker/start-worker.js';
import { testDialects } from '../support/databases.js';
import { insertExperience } from '../support/experiences.js';
import { api, startTestApp, type ClientCredentials, type TestApp } from '../support/test-app.js';

for (const dialect of testDialects()) {
  describe(`request events [${dialect}]`, () => {
    let t: TestApp;
    let worker: JobWorker;
    let client: ClientCredentials;
    let token: string;
    let experience: { name: string };
    const events = (id: string) => api(t.url, 'GET', `/v2/request/${id}/events`, { token });
    const postEvent = (id: string, body: unknown, as = token) => api(t.url, 'POST', `/v2/request/${id}/events`, { token: as, body });
    const processedRequest = async () => {
      const { body } = await api(t.url, 'POST', '/v2/requests', { token, body: { experience: experience.name } });
      await worker.runUntilIdle();
      return body.id as string;
    };

    before(async () => {
      t = await startTestApp(dialect);
      worker = startWorker(t.deps, { autoStart: false });
      client = await t.createClientAccount();
      token = await t.token(client);
      experience = await insertExperience(t.deps.db, client.accountId, { prizes: [{ id: 'tv', kind: 'physical', bucket: 'electronics', value: 500 }] });
    });
    after(async () => {
      await worker.stop();
      await t.close();
    });

    it('a partner posts em-rota-de-entrega then pedido-entregue; the list is oldest first with every seed field', async () => {
      const id = await processedRequest();
      const route = await postEvent(id, {
        name: 'em-rota-de-entrega',
        refId: 'ship-1',
        data: { trackingCode: 'BR123456789', trackingLink: 'https://tracking.example/BR123456789' },
      });
      assert.equal(route.status, 201, JSON.stringify(route.body));
      assert.deepEqual(Object.keys(route.body).sort(), ['data', 'date', 'experience', 'name', 'refId', 'title']);
      const delivered = await postEvent(id, { name: 'pedido-entregue', refId: 'ship-1', title: 'Entregue ao cliente' });
      assert.equal(delivered.status, 201);

      const list = await events(id);
      assert.equal(list.status, 200);
      assert.deepEqual(
        list.body.map((e: any) => ({ name: e.name, refId: e.refId, experience: e.experience, data: e.data })),
        [
          { name: 'pedido-registrado', refId: id, experience: experience.name, data: undefined },
          { name: 'pedido-processado', refId: id, experience: experience.name, data: undefined },
          { name: 'em-rota-de-entrega', refId: 'ship-1', experience: experience.name, data: { trackingCode: 'BR123456789', trackingLink: 'https://tracking.example/BR123456789' } },
          { name: 'pedido-entregue', refId: 'ship-1', experience: experience.name, data: undefined },
        ],
      );
      assert.equal(list.body[3].title, 'Entregue ao cliente');
      const dates = list.body.map((e: any) => Date.parse(e.date));
      assert.deepEqual(
        [...dates].sort((a, b) => a - b),
        dates,
        'dates never go backwards',
      );
    });

    it('posting the same (name, refId) again is idempotent: 200 with the stored event, no duplicate', async () => {
      const id = await processedRequest();
      const body = { name: 'em-rota-de-entrega', refId: 'ship-9', data: { trackingCode: 'T9', trackingLink: 'http://tracking.example/T9' } };
      const first = await postEvent(id, body);
      const again = await postEvent(id, { ...body, data: { trackingCode: 'OTHER', trackingLink: 'http://tracking.example/x' } });
      assert.equal(first.status, 201);
      assert.equal(again.status, 200);
      assert.deepEqual(again.body, first.body);
      assert.equal((await events(id)).body.filter((e: any) => e.name === 'em-rota-de-entrega').length, 1);
    });

    const invalid: Array<[string, unknown, string]> = [
      ['unknown event name', { name: 'pedido-perdido', refId: 'r' }, 'body.name'],
      ['missing refId', { name: 'pedido-entregue' }, 'body.refId'],
      ['route event without tracking code', { name: 'em-rota-de-entrega', refId: 'r', data: { trackingLink: 'https://t.example/1' } }, 'body.data.trackingCode'],
      ['route event without data', { name: 'em-rota-de-entrega', refId: 'r' }, 'body.data.tracking'],
      ['tracking link not http(s)', { name: 'em-rota-de-entrega', refId: 'r', data: { trackingCode: 'c', trackingLink: 'javascript:alert(1)' } }, 'body.data.trackingLink'],
      ['data not an object', { name: 'pedido-entregue', refId: 'r', data: 'x' }, 'body.data'],
      ['unknown member', { name: 'pedido-entregue', refId: 'r', when: 'now' }, 'body'],
    ];
    for (const [what, body, path] of invalid) {
      it(`400 for ${what}`, async () => {
        const id = await processedRequest();
        const response = await postEvent(id, body);
        assert.equal(response.status, 400, JSON.stringify(response.body));
        assert.ok(
          response.body.errors.some((e: { path: string }) => e.path.startsWith(path)),
          JSON.stringify(response.body.errors),
        );
        assert.equal((await events(id)).body.length, 2, 'nothing was appended');
      });
    }

    it('fulfillment events wait for processing: 409 while the request is only received', async () => {
      const { body } = await api(t.url, 'POST', '/v2/requests', { token, body: { experience: experience.name } });
      const response = await postEvent(body.id, { name: 'pedido-entregue', refId: 'early' });
      assert.equal(response.status, 409);
      assert.deepEqual((await events(body.id)).body, []);
      await worker.runUntilIdle();
    });

    it('scopes: events:read lists, events:write posts; unknown request is 404', async () => {
      const id = await processedRequest();
      const readOnly = await t.token(client, 'events:read');
      const writeOnly = await t.token(client, 'events:write');
      assert.equal((await postEvent(id, { name: 'pedido-entregue', refId: 'x' }, readOnly)).status, 403);
      assert.equal((await api(t.url, 'GET', `/v2/request/${id}/events`, { token: writeOnly })).status, 403);
      assert.equal((await postEvent(id, { name: 'pedido-entregue', refId: 'x' }, writeOnly)).status, 201);
      assert.equal((await api(t.url, 'GET', `/v2/request/req_nope/events`, { token: readOnly })).status, 404);
      // An operator (delivery partners' integration) posts for the account with ?accountId=.
      const operator = await t.token(t.operator, 'admin');
      const byOperator = await api(t.url, 'POST', `/v2/request/${id}/events?accountId=${client.accountId}`, {
        token: operator,
        body: { name: 'pedido-entregue', refId: 'op-1' },
      });
      assert.equal(byOperator.status, 201);
    });
  });
}
