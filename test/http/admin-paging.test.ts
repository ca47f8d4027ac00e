// needs: database
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { testDialects } from '../support/databases.js';
import { api, startTestApp, type TestApp } from '../support/test-app.js';

/** Follows nextCursor from the first page to the last; returns the pages' ids in order. */
async function walk(t: TestApp, token: string, path: string, limit: number): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const separator = path.includes('?') ? '&' : '?';
    const page = await api(t.url, 'GET', `${path}${separator}limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, { token });
    assert.equal(page.status, 200, JSON.stringify(page.body));
    assert.deepEqual(Object.keys(page.body).sort(), ['data', 'nextCursor']);
    assert.ok(page.body.data.length <= limit);
    ids.push(...page.body.data.map((item: any) => item.id ?? item.client_id));
    cursor = page.body.nextCursor;
    pages += 1;
  } while (cursor !== null && pages < 100);
  return { ids, pages };
}

for (const dialect of testDialects()) {
  describe(`paged admin lists [${dialect}]`, () => {
    let t: TestApp;
    let admin: string;
    before(async () => {
      t = await startTestApp(dialect);
      admin = await t.token(t.operator);
    });
    after(() => t.close());

    it('accounts, clients and experiences page with limit and cursor, each item once, in creation order; without them the whole array', async () => {
      const accounts = [];
      for (let i = 0; i < 5; i++) accounts.push((await api(t.url, 'POST', '/v2/admin/accounts', { token: admin, body: { name: `paged-${i}` } })).body);
      const account = accounts[0]!;
      for (let i = 0; i < 3; i++) assert.equal((await api(t.url, 'POST', `/v2/admin/accounts/${account.id}/clients`, { token: admin })).status, 201);
      for (let i = 0; i < 4; i++) {
        const created = await api(t.url, 'POST', `/v2/admin/experiences?accountId=${account.id}`, { token: admin, body: { name: `e${i}`, title: `E${i}` } });
        assert.equal(created.status, 201, JSON.stringify(created.body));
      }
      for (const [path, key] of [
        ['/v2/admin/accounts', 'id'],
        [`/v2/admin/accounts/${account.id}/clients`, 'client_id'],
        [`/v1/admin/experiences?accountId=${account.id}`, 'id'],
      ] as const) {
        const all = await api(t.url, 'GET', path, { token: admin });
        assert.ok(Array.isArray(all.body), `${path}: today's callers get the whole array`);
        const expected = all.body.map((item: any) => item[key]);
        assert.ok(expected.length >= 3, path);
        const walked = await walk(t, admin, path, 2);
        assert.deepEqual(walked.ids, expected, path);
        assert.equal(walked.pages, Math.ceil(expected.length / 2), path);
        const one = await api(t.url, 'GET', `${path}${path.includes('?') ? '&' : '?'}cursor=${encodeURIComponent(expected[0])}`, { token: admin });
        assert.deepEqual(
          one.body.data.map((item: any) => item[key]),
          expected.slice(1, 51),
          `${path}: a cursor alone pages with the default size`,
        );
      }
    });

    it("a bad limit is a 400 naming it; another account's experiences stay out of a page", async () => {
      for (const limit of ['0', '201', 'ten']) {
        const response = await api(t.url, 'GET', `/v2/admin/accounts?limit=${limit}`, { token: admin });
        assert.equal(response.status, 400, limit);
        assert.match(JSON.stringify(response.body), /limit/);
      }
      const other = (await api(t.url, 'POST', '/v2/admin/accounts', { token: admin, body: { name: 'elsewhere' } })).body;
      await api(t.url, 'POST', `/v2/admin/experiences?accountId=${other.id}`, { token: admin, body: { name: 'theirs', title: 'Theirs' } });
      const mine = await api(t.url, 'GET', '/v2/admin/experiences?limit=200', { token: admin });
      assert.ok(!mine.body.data.some((experience: any) => experience.name === 'theirs'));
    });
  });
}
