// needs: database
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { takePrizeStock } from '../../src/storage/repositories/experiences.js';
import { testDialects } from '../support/databases.js';
import { api, startTestApp, type ClientCredentials, type TestApp } from '../support/test-app.js';

const summerSale = () => ({
  name: 'summer-sale',
  title: 'Summer sale',
  events: ['purchase', 'signup'],
  prizes: [
    { id: 'coupon-10', bucket: 'coupons', title: '10% off', description: 'ten percent', value: 10, quantity: 1, kind: 'coupon', stock: 2 },
    { id: 'cash-5', bucket: 'cash', title: 'R$5', value: 5, kind: 'payment' },
  ],
});

for (const dialect of testDialects()) {
  describe(`admin experiences [${dialect}]`, () => {
    let t: TestApp;
    let admin: string;
    let acme: ClientCredentials;
    let base: string;
    before(async () => {
      t = await startTestApp(dialect);
      admin = await t.token(t.operator);
      acme = await t.createClientAccount('acme');
      base = `/v2/admin/experiences?accountId=${acme.accountId}`;
    });
    after(() => t.close());

    const at = (id: string, accountId = acme.accountId) => `/v2/admin/experiences/${id}?accountId=${accountId}`;

    it('creates an experience for an account with defaults filled in, and reads it back', async () => {
      const created = await api(t.url, 'POST', base, { token: admin, body: summerSale() });
      assert.equal(created.status, 201);
      const { id, createdAt, updatedAt, ...rest } = created.body;
      assert.match(id, /^exp_/);
      assert.ok(!Number.isNaN(Date.parse(createdAt)) && createdAt === updatedAt);
      assert.deepEqual(rest, {
        accountId: acme.accountId,
        name: 'summer-sale',
        title: 'Summer sale',
        active: true,
        events: ['purchase', 'signup'],
        prizes: [
          { id: 'coupon-10', bucket: 'coupons', title: '10% off', description: 'ten percent', value: 10, quantity: 1, kind: 'coupon', stock: 2 },
          { id: 'cash-5', bucket: 'cash', title: 'R$5', description: '', value: 5, quantity: 1, kind: 'payment', stock: null },
        ],
      });
      assert.equal(created.headers.get('location'), `/v2/admin/experiences/${id}?accountId=${acme.accountId}`);
      const read = await api(t.url, 'GET', created.headers.get('location')!, { token: admin });
      assert.deepEqual(read.body, created.body);
      const list = await api(t.url, 'GET', base, { token: admin });
      assert.deepEqual(list.body, [created.body]);
      const minimal = await api(t.url, 'POST', base, { token: admin, body: { name: 'bare', title: 'Bare' } });
      assert.equal(minimal.status, 201);
      assert.deepEqual([minimal.body.active, minimal.body.events, minimal.body.prizes], [true, [], []]);
    });

    it('without ?accountId= an experience belongs to the operator account', async () => {
      const own = await api(t.url, 'POST', '/v1/admin/experiences', { token: admin, body: { name: 'house', title: 'House' } });
      assert.equal(own.status, 201);
      assert.equal(own.body.accountId, t.operator.accountId);
      assert.equal(own.headers.get('location'), `/v1/admin/experiences/${own.body.id}`);
      const names = (await api(t.url, 'GET', base, { token: admin })).body.map((e: any) => e.name);
      assert.ok(!names.includes('house'));
    });

    it('a duplicate name within the account is 409; the same name in another account is fine', async () => {
      await api(t.url, 'POST', base, { token: admin, body: { name: 'dup', title: 'D' } });
      const again = await api(t.url, 'POST', base, { token: admin, body: { name: 'dup', title: 'D' } });
      assert.equal(again.status, 409);
      assert.equal(again.headers.get('content-type'), 'application/problem+json; charset=utf-8');
      const other = await t.createClientAccount();
      assert.equal((await api(t.url, 'POST', `/v2/admin/experiences?accountId=${other.accountId}`, { token: admin, body: { name: 'dup', title: 'D' } })).status, 201);
      const renamed = await api(t.url, 'POST', base, { token: admin, body: { name: 'dup2', title: 'D' } });
      assert.equal((await api(t.url, 'PUT', at(renamed.body.id), { token: admin, body: { name: 'dup' } })).status, 409);
    });

    it('validation errors are 400 with the field path', async () => {
      const cases: [unknown, string][] = [
        [{ title: 'no name' }, 'body.name'],
        [{ name: 'has space', title: 'x' }, 'body.name'],
        [{ name: 'x'.repeat(101), title: 'x' }, 'body.name'],
        [{ name: 'ok', title: 'x', active: 'yes' }, 'body.active'],
        [{ name: 'ok', title: 'x', events: ['a', 'a'] }, 'body.events'],
        [{ name: 'ok', title: 'x', events: [''] }, 'body.events.0'],
        [{ name: 'ok', title: 'x', prizes: [{ ...summerSale().prizes[0], value: -1 }] }, 'body.prizes.0.value'],
        [{ name: 'ok', title: 'x', prizes: [{ ...summerSale().prizes[0], value: '10' }] }, 'body.prizes.0.value'],
        [{ name: 'ok', title: 'x', prizes: [{ ...summerSale().prizes[0], quantity: 1.5 }] }, 'body.prizes.0.quantity'],
        [{ name: 'ok', title: 'x', prizes: [{ ...summerSale().prizes[0], quantity: 0 }] }, 'body.prizes.0.quantity'],
        [{ name: 'ok', title: 'x', prizes: [{ ...summerSale().prizes[0], stock: -1 }] }, 'body.prizes.0.stock'],
        [{ name: 'ok', title: 'x', prizes: [{ ...summerSale().prizes[0], stock: 3_000_000_000 }] }, 'body.prizes.0.stock'],
        [{ name: 'ok', title: 'x', prizes: [{ ...summerSale().prizes[0], kind: 'gift' }] }, 'body.prizes.0.kind'],
        [{ name: 'ok', title: 'x', prizes: [{ ...summerSale().prizes[1], id: undefined }] }, 'body.prizes.0.id'],
        [{ name: 'ok', title: 'x', prizes: [summerSale().prizes[0], { ...summerSale().prizes[1], id: 'coupon-10' }] }, 'body.prizes.1.id'],
        [{ name: 'ok', title: 'x', prizes: Array.from({ length: 101 }, (_, i) => ({ ...summerSale().prizes[1], id: `p${i}` })) }, 'body.prizes'],
        [{ name: 'ok', title: 'x', color: 'red' }, 'body.color'],
      ];
      for (const [body, path] of cases) {
        const response = await api(t.url, 'POST', base, { token: admin, body });
        assert.equal(response.status, 400, JSON.stringify(body).slice(0, 200));
        assert.equal(response.body.errors?.[0]?.path, path, JSON.stringify(body).slice(0, 200));
      }
      const existing = (await api(t.url, 'GET', base, { token: admin })).body[0];
      const badPut = await api(t.url, 'PUT', at(existing.id), { token: admin, body: { prizes: [{ id: 'p', title: 'P' }] } });
      assert.equal(badPut.status, 400);
      assert.equal(badPut.body.errors[0].path, 'body.prizes.0.bucket');
      assert.equal((await api(t.url, 'POST', base, { token: admin, body: '{not json' })).status, 400);
    });

    it('PUT replaces the members given, keeps the omitted ones, and keeps the remaining stock of a kept prize', async () => {
      const created = (await api(t.url, 'POST', base, { token: admin, body: { ...summerSale(), name: 'put-me' } })).body;
      // One unit is taken by a request, as the processing pipeline does.
      assert.equal(await takePrizeStock(t.deps.db, created.id, 'coupon-10'), true);
      const updated = await api(t.url, 'PUT', at(created.id), {
        token: admin,
        body: {
          title: 'Summer sale II',
          prizes: [
            { id: 'new-box', bucket: 'boxes', title: 'Box', value: 0, kind: 'physical' },
            { id: 'coupon-10', bucket: 'coupons', title: '15% off', value: 15, kind: 'coupon' },
          ],
        },
      });
      assert.equal(updated.status, 200);
      assert.equal(updated.body.title, 'Summer sale II');
      assert.equal(updated.body.name, 'put-me');
      assert.deepEqual(updated.body.events, ['purchase', 'signup']);
      assert.equal(updated.body.active, true);
      assert.equal(updated.body.createdAt, created.createdAt);
      assert.deepEqual(
        updated.body.prizes.map((p: any) => [p.id, p.title, p.value, p.stock]),
        [
          ['new-box', 'Box', 0, null],
          ['coupon-10', '15% off', 15, 1],
        ],
      );
      const restocked = await api(t.url, 'PUT', at(created.id), {
        token: admin,
        body: { active: false, events: [], prizes: [{ id: 'coupon-10', bucket: 'coupons', title: '15% off', value: 15, kind: 'coupon', stock: 50 }] },
      });
      assert.deepEqual([restocked.body.active, restocked.body.events, restocked.body.prizes.map((p: any) => p.stock)], [false, [], [50]]);
      // A GET result can be edited and sent back as is: read-only members are ignored.
      const roundTrip = await api(t.url, 'PUT', at(created.id), { token: admin, body: { ...restocked.body, title: 'Round trip' } });
      assert.equal(roundTrip.status, 200);
      assert.equal(roundTrip.body.title, 'Round trip');
      assert.deepEqual(roundTrip.body.prizes, restocked.body.prizes);
    });

    it('DELETE removes an experience; unknown ids are 404', async () => {
      const created = (await api(t.url, 'POST', base, { token: admin, body: { ...summerSale(), name: 'delete-me' } })).body;
      assert.equal((await api(t.url, 'DELETE', at(created.id), { token: admin })).status, 204);
      assert.equal((await api(t.url, 'GET', at(created.id), { token: admin })).status, 404);
      assert.equal((await api(t.url, 'DELETE', at(created.id), { token: admin })).status, 404);
      assert.equal((await api(t.url, 'PUT', at('exp_nope'), { token: admin, body: { title: 'x' } })).status, 404);
    });

    it("another account's experience is a 404 on every route, and stays unchanged", async () => {
      const created = (await api(t.url, 'POST', base, { token: admin, body: { ...summerSale(), name: 'private' } })).body;
      const other = await t.createClientAccount();
      assert.equal((await api(t.url, 'GET', at(created.id, other.accountId), { token: admin })).status, 404);
      assert.equal((await api(t.url, 'GET', `/v2/admin/experiences/${created.id}`, { token: admin })).status, 404);
      assert.equal((await api(t.url, 'PUT', at(created.id, other.accountId), { token: admin, body: { title: 'hijack' } })).status, 404);
      assert.equal((await api(t.url, 'DELETE', at(created.id, other.accountId), { token: admin })).status, 404);
      assert.equal((await api(t.url, 'GET', at(created.id), { token: admin })).body.title, 'Summer sale');
      assert.equal((await api(t.url, 'GET', '/v2/admin/experiences?accountId=acc_unknown', { token: admin })).status, 404);
    });

    it('a token without the admin scope gets 403, even for its own account', async () => {
      const token = await t.token(acme);
      for (const [method, path, body] of [
        ['GET', base, undefined],
        ['POST', base, summerSale()],
        ['GET', at('exp_x'), undefined],
        ['PUT', at('exp_x'), { title: 'x' }],
        ['DELETE', at('exp_x'), undefined],
        ['GET', '/v2/admin/experiences', undefined],
      ] as const) {
        const response = await api(t.url, method, path, { token, body });
        assert.equal(response.status, 403, `${method} ${path}`);
      }
    });
  });
}
