// needs: database
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { JobWorker } from '../../src/worker/job-worker.js';
import { startWorker } from '../../src/worker/start-worker.js';
import { testDialects } from '../support/databases.js';
import { insertExperience } from '../support/experiences.js';
import { api, startTestApp, type ClientCredentials, type TestApp } from '../support/test-app.js';

for (const dialect of testDialects()) {
  describe(`reward requests: validation, idempotency, scopes and isolation [${dialect}]`, () => {
    let t: TestApp;
    let worker: JobWorker;
    let client: ClientCredentials;
    let token: string;
    let experience: { name: string };
    const post = (body: unknown, headers: Record<string, string> = {}, as = token) => api(t.url, 'POST', '/v2/requests', { token: as, body, headers });
    const requestCount = async () =>
      Number(
        (
          await t.deps.db
            .selectFrom('requests')
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );

    before(async () => {
      t = await startTestApp(dialect);
      worker = startWorker(t.deps, { autoStart: false });
      client = await t.createClientAccount();
      token = await t.token(client);
      experience = await insertExperience(t.deps.db, client.accountId, { prizes: [{ id: 'p' }] });
    });
    after(async () => {
      await worker.stop();
      await t.close();
    });

    const badBodies: Array<[string, unknown, string]> = [
      ['experience missing', { event: 'x' }, 'body.experience'],
      ['experience not a string', { experience: 42 }, 'body.experience'],
      ['experience empty', { experience: '' }, 'body.experience'],
      ['event not a string', { experience: 'x', event: true }, 'body.event'],
      ['unknown member', { experience: 'x', color: 'red' }, 'body'],
      ['callback URL not http(s)', { experience: 'x', registeredCallbackUrl: 'ftp://example.com/hook' }, 'body.registeredCallbackUrl'],
      ['callback URL not a URL', { experience: 'x', processedCallbackUrl: 'not a url' }, 'body.processedCallbackUrl'],
      ['body is an array', [{ experience: 'x' }], 'body'],
    ];
    for (const [what, body, path] of badBodies) {
      it(`400 problem+json, nothing stored: ${what}`, async () => {
        const before = await requestCount();
        const response = await post(body);
        assert.equal(response.status, 400, JSON.stringify(response.body));
        assert.match(response.headers.get('content-type')!, /^application\/problem\+json/);
        assert.ok(
          response.body.errors.some((e: { path: string }) => e.path.startsWith(path)),
          JSON.stringify(response.body.errors),
        );
        assert.equal(await requestCount(), before);
      });
    }

    it('400 for a body that is not JSON, 415 for another media type', async () => {
      assert.equal((await post('{"experience":')).status, 400);
      const form = await api(t.url, 'POST', '/v2/requests', { token, body: 'experience=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
      assert.equal(form.status, 415);
    });

    it('accepts the per-request callback URLs and returns them', async () => {
      const created = await post({ experience: experience.name, registeredCallbackUrl: 'http://127.0.0.1:9/registered', processedCallbackUrl: 'https://127.0.0.1:9/processed' });
      assert.equal(created.status, 202);
      const view = (await api(t.url, 'GET', `/v2/requests/${created.body.id}`, { token })).body;
      assert.equal(view.registeredCallbackUrl, 'http://127.0.0.1:9/registered');
      assert.equal(view.processedCallbackUrl, 'https://127.0.0.1:9/processed');
    });

    it('Idempotency-Key replays the first response; the same key with another body is 409; keys are per account', async () => {
      const body = { experience: experience.name, data: { a: 1, b: [1, 2] } };
      const first = await post(body, { 'idempotency-key': 'order-77' });
      assert.equal(first.status, 202);
      const count = await requestCount();
      // Member order does not make a different body.
      const again = await post({ data: { b: [1, 2], a: 1 }, experience: experience.name }, { 'idempotency-key': 'order-77' });
      assert.equal(again.status, 202);
      assert.deepEqual(again.body, first.body);
      assert.equal(again.headers.get('location'), first.headers.get('location'));
      assert.equal(again.headers.get('idempotent-replayed'), 'true');
      assert.equal(await requestCount(), count, 'a replay stores nothing');
      // Still the first response after the request moved on.
      await worker.runUntilIdle();
      assert.deepEqual((await post(body, { 'idempotency-key': 'order-77' })).body, { id: first.body.id, status: 'received' });

      const other = await post({ ...body, data: { a: 2 } }, { 'idempotency-key': 'order-77' });
      assert.equal(other.status, 409);
      assert.match(other.headers.get('content-type')!, /^application\/problem\+json/);

      const stranger = await t.createClientAccount();
      await insertExperience(t.deps.db, stranger.accountId, { name: experience.name });
      const theirs = await post(body, { 'idempotency-key': 'order-77' }, await t.token(stranger));
      assert.equal(theirs.status, 202);
      assert.notEqual(theirs.body.id, first.body.id);
    });

    it('concurrent posts with one Idempotency-Key store one request and all get its response', async () => {
      const before = await requestCount();
      const responses = await Promise.all(Array.from({ length: 20 }, () => post({ experience: experience.name }, { 'idempotency-key': 'burst-1' })));
      assert.deepEqual(new Set(responses.map((r) => r.status)), new Set([202]));
      assert.equal(new Set(responses.map((r) => r.body.id)).size, 1);
      assert.equal(await requestCount(), before + 1);
    });

    it('an Idempotency-Key expires after 24 h: then it starts a new request', async () => {
      const first = await post({ experience: experience.name }, { 'idempotency-key': 'old-key' });
      await t.deps.db
        .updateTable('idempotency_keys')
        .set({ expires_at: Date.now() - 1 })
        .where('key', '=', 'old-key')
        .execute();
      const second = await post({ experience: experience.name, event: 'changed' }, { 'idempotency-key': 'old-key' });
      assert.equal(second.status, 202);
      assert.notEqual(second.body.id, first.body.id);
    });

    it('a malformed Idempotency-Key is 400', async () => {
      const response = await post({ experience: experience.name }, { 'idempotency-key': 'x'.repeat(300) });
      assert.equal(response.status, 400);
    });

    it('scopes: requests:write to post, requests:read to get', async () => {
      const readOnly = await t.token(client, 'requests:read');
      assert.equal((await post({ experience: experience.name }, {}, readOnly)).status, 403);
      const created = await post({ experience: experience.name });
      const writeOnly = await t.token(client, 'requests:write');
      assert.equal((await api(t.url, 'GET', `/v2/requests/${created.body.id}`, { token: writeOnly })).status, 403);
      assert.equal((await api(t.url, 'GET', `/v2/requests/${created.body.id}`, { token: readOnly })).status, 200);
      assert.equal((await api(t.url, 'POST', '/v2/requests', { body: { experience: 'x' } })).status, 401);
    });

    it("another account's request is a 404 on every route; an operator may act for the account", async () => {
      const created = await post({ experience: experience.name });
      await worker.runUntilIdle();
      const id = created.body.id as string;
      const stranger = await t.token(await t.createClientAccount());
      for (const [method, path, body] of [
        ['GET', `/v2/requests/${id}`, undefined],
        ['GET', `/v1/requests/${id}`, undefined],
        ['GET', `/v2/request/${id}/events`, undefined],
        ['POST', `/v2/request/${id}/events`, { name: 'pedido-entregue', refId: 'x' }],
      ] as const) {
        const response = await api(t.url, method, path, { token: stranger, body });
        assert.equal(response.status, 404, `${method} ${path}`);
        assert.match(response.headers.get('content-type')!, /^application\/problem\+json/);
      }
      assert.equal((await api(t.url, 'GET', '/v2/requests/req_doesnotexist', { token })).status, 404);
      const operator = await t.token(t.operator, 'admin');
      const asOperator = await api(t.url, 'GET', `/v2/requests/${id}?accountId=${client.accountId}`, { token: operator });
      assert.equal(asOperator.status, 200);
      assert.equal(asOperator.body.status, 'processed');
    });

    it('the routes exist under /v1 too, with a /v1 Location', async () => {
      const created = await api(t.url, 'POST', '/v1/requests', { token, body: { experience: experience.name } });
      assert.equal(created.status, 202);
      assert.equal(created.headers.get('location'), `${t.config.publicUrl}/v1/requests/${created.body.id}`);
    });
  });
}
