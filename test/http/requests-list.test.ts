// needs: database
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, afterEach, before, describe, it } from 'node:test';
import { idTime } from '../../src/domain/ids.js';
import { insertRequestRows, newRequestRow } from '../../src/storage/repositories/requests.js';
import type { JobWorker } from '../../src/worker/job-worker.js';
import { startWorker } from '../../src/worker/start-worker.js';
import { testDialects } from '../support/databases.js';
import { insertExperience } from '../support/experiences.js';
import { api, startTestApp, type ClientCredentials, type TestApp } from '../support/test-app.js';

/**
 * GET /requests: the account's requests newest first, each as GET /requests/{id} shows it, with
 * cursor paging that neither skips nor repeats requests made in the same millisecond, the filters
 * `status`, `experience`, `since` (inclusive) and `until` (exclusive), and nobody else's requests.
 */
for (const dialect of testDialects()) {
  describe(`GET /requests, the account's requests newest first [${dialect}]`, () => {
    let t: TestApp;
    let worker: JobWorker;
    /**
     * The service's clock: the real one, or held at a given millisecond in the past (many requests
     * made "at once"). A test that holds it takes its token after: a token is refused before its
     * issue time.
     */
    let heldAt: number | undefined;
    const clock = () => heldAt ?? Date.now();

    before(async () => {
      t = await startTestApp(dialect, {}, { clock });
      worker = startWorker(t.deps, { autoStart: false });
    });
    afterEach(() => {
      heldAt = undefined;
    });
    after(async () => {
      await worker.stop();
      await t.close();
    });

    /** A fresh account with the experiences `summer` (one prize) and `winter` (inactive: its requests are rejected). */
    async function tenant(): Promise<{ client: ClientCredentials; token: string }> {
      const client = await t.createClientAccount();
      await insertExperience(t.deps.db, client.accountId, { name: 'summer', prizes: [{ id: 'p', value: 5 }] });
      await insertExperience(t.deps.db, client.accountId, { name: 'winter', active: false });
      return { client, token: await t.token(client) };
    }
    const post = async (token: string, experience: string) => {
      const response = await api(t.url, 'POST', '/v2/requests', { token, body: { experience, event: 'purchase' } });
      assert.equal(response.status, 202, JSON.stringify(response.body));
      return response.body.id as string;
    };
    const list = async (token: string, query = '') => {
      const response = await api(t.url, 'GET', `/v2/requests${query ? `?${query}` : ''}`, { token });
      assert.equal(response.status, 200, JSON.stringify(response.body));
      return response.body as { data: Array<{ id: string; status: string; experience: string; createdAt: string }>; nextCursor: string | null };
    };
    /** Every page of the list, following nextCursor. */
    const everyPage = async (token: string, query: string) => {
      const ids: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const page = await list(token, `${query}${cursor ? `&cursor=${cursor}` : ''}`);
        ids.push(...page.data.map((r) => r.id));
        cursor = page.nextCursor;
        pages += 1;
        assert.ok(pages < 100, 'the paging ends');
      } while (cursor);
      return { ids, pages };
    };

    it('lists the requests newest first, each exactly as GET /requests/{id} shows it, whatever its status', async () => {
      const { token } = await tenant();
      const processed = await post(token, 'summer');
      const rejected = await post(token, 'winter');
      await worker.runUntilIdle();
      const received = await post(token, 'summer');
      const page = await list(token);
      assert.deepEqual(
        page.data.map((r) => r.id),
        [received, rejected, processed],
      );
      assert.deepEqual(
        page.data.map((r) => r.status),
        ['received', 'rejected', 'processed'],
      );
      assert.equal(page.nextCursor, null);
      for (const item of page.data) assert.deepEqual(item, (await api(t.url, 'GET', `/v2/requests/${item.id}`, { token })).body);
      assert.equal((await api(t.url, 'GET', '/v1/requests', { token })).status, 200, 'under /v1 too');
    });

    it('pages by cursor without skipping or repeating requests made in the same millisecond (by this process or by others)', async () => {
      const at = Date.now() - 60_000;
      heldAt = at;
      const { client, token } = await tenant();
      for (let i = 0; i < 12; i++) await post(token, 'summer');
      // Requests another API process made in that millisecond: ids with the same time and random parts of their own.
      const timePart = (await list(token)).data[0]!.id.slice(4, 14);
      const alphabet = '0123456789abcdefghjkmnpqrstvwxyz';
      const foreignId = () => `req_${timePart}${Array.from(randomBytes(16), (b) => alphabet[b % 32]).join('')}`;
      await insertRequestRows(
        t.deps.db,
        Array.from({ length: 9 }, () => newRequestRow({ id: foreignId(), accountId: client.accountId, experience: 'summer' }, at)),
      );
      heldAt = at + 1;
      const newer = await post(token, 'summer');
      heldAt = undefined;
      const all = await list(token, 'limit=200');
      assert.equal(all.data.length, 22);
      assert.equal(all.data[0]!.id, newer);
      assert.ok(
        all.data.slice(1).every((r) => Date.parse(r.createdAt) === at && idTime(r.id) === at),
        '21 requests share one createdAt',
      );
      const expected = [...all.data.slice(1).map((r) => r.id)].sort().reverse();
      assert.deepEqual(
        all.data.slice(1).map((r) => r.id),
        expected,
        'then by id, descending',
      );
      for (const limit of [1, 4, 7]) {
        const { ids, pages } = await everyPage(token, `limit=${limit}`);
        assert.deepEqual(
          ids,
          all.data.map((r) => r.id),
          `pages of ${limit}`,
        );
        assert.equal(pages, Math.ceil(22 / limit));
      }
    });

    it('filters by status, experience and a range of creation times (since inclusive, until exclusive), in any combination', async () => {
      const t0 = Date.now() - 60_000;
      heldAt = t0;
      const { token } = await tenant();
      const ids: string[] = [];
      for (let i = 0; i < 6; i++) {
        heldAt = t0 + i * 1000;
        ids.push(await post(token, i % 3 === 2 ? 'winter' : 'summer'));
      }
      heldAt = undefined;
      await worker.runUntilIdle();
      const ofQuery = async (query: string) => (await list(token, query)).data.map((r) => r.id);
      const newestFirst = (indexes: number[]) => indexes.map((i) => ids[i]!).reverse();
      const iso = (ms: number) => new Date(ms).toISOString();
      assert.deepEqual(await ofQuery('status=rejected'), newestFirst([2, 5]));
      assert.deepEqual(await ofQuery('status=processed'), newestFirst([0, 1, 3, 4]));
      assert.deepEqual(await ofQuery('status=received'), []);
      assert.deepEqual(await ofQuery('experience=winter'), newestFirst([2, 5]));
      assert.deepEqual(await ofQuery('experience=autumn'), []);
      assert.deepEqual(await ofQuery(`since=${iso(t0 + 1000)}&until=${iso(t0 + 4000)}`), newestFirst([1, 2, 3]), 'since inclusive, until exclusive');
      assert.deepEqual(await ofQuery(`since=${iso(t0 + 1001)}`), newestFirst([2, 3, 4, 5]));
      assert.deepEqual(await ofQuery(`until=${iso(t0 + 1)}`), newestFirst([0]));
      assert.deepEqual(await ofQuery(`since=${iso(t0 + 2000)}&until=${iso(t0 + 2000)}`), [], 'an empty range');
      assert.deepEqual(await ofQuery(`status=processed&experience=summer&since=${iso(t0 + 1000)}&until=${iso(t0 + 5000)}`), newestFirst([1, 3, 4]));
      // An offset is honoured (`+` percent-encoded in a query string).
      assert.deepEqual(await ofQuery(`since=${encodeURIComponent(new Date(t0 + 3000 + 7_200_000).toISOString().replace('Z', '+02:00'))}`), newestFirst([3, 4, 5]));
      // Filters hold across pages.
      const { ids: paged } = await everyPage(token, 'status=processed&limit=1');
      assert.deepEqual(paged, newestFirst([0, 1, 3, 4]));
    });

    it("never lists another account's requests; an operator lists an account's with ?accountId=", async () => {
      const a = await tenant();
      const b = await tenant();
      const mine = await post(a.token, 'summer');
      const theirs = await post(b.token, 'summer');
      assert.deepEqual(
        (await list(a.token, 'limit=200')).data.map((r) => r.id),
        [mine],
      );
      assert.deepEqual(
        (await list(b.token, 'limit=200')).data.map((r) => r.id),
        [theirs],
      );
      // B's id as A's cursor starts A's list at that time; it shows nothing of B's.
      assert.deepEqual(
        (await list(a.token, `cursor=${theirs}`)).data.map((r) => r.id),
        [mine].filter((id) => id < theirs),
      );
      const operator = await t.token(t.operator, 'admin');
      assert.deepEqual(
        (await list(operator, `accountId=${b.client.accountId}`)).data.map((r) => r.id),
        [theirs],
      );
      assert.equal((await api(t.url, 'GET', `/v2/requests?accountId=${b.client.accountId}`, { token: a.token })).status, 404);
      assert.equal((await api(t.url, 'GET', '/v2/requests', { token: await t.token(a.client, 'requests:write') })).status, 403);
    });

    it('answers 400 naming the member for a cursor it did not give, a date that is not RFC 3339, since after until, an unknown status, a limit out of range', async () => {
      const { token } = await tenant();
      const bad: Array<[string, string]> = [
        ['cursor=abc', 'querystring.cursor'],
        ['cursor=msg_01j9z3m2s0a1b2c3d4e5f6g7h8', 'querystring.cursor'],
        ['cursor=req_01j9z3m2s0a1b2c3d4e5f6g7h', 'querystring.cursor'],
        ['since=yesterday', 'querystring.since'],
        ['since=2024-07-01T12:00:00', 'querystring.since'],
        ['until=2024-07-01', 'querystring.until'],
        ['since=2024-07-02T00:00:00Z&until=2024-07-01T00:00:00Z', 'querystring.since'],
        ['since=2016-12-31T23:59:60Z', 'querystring.since'],
        ['status=done', 'querystring.status'],
        ['limit=0', 'querystring.limit'],
        ['limit=201', 'querystring.limit'],
        ['experience=', 'querystring.experience'],
      ];
      for (const [query, path] of bad) {
        const response = await api(t.url, 'GET', `/v2/requests?${query}`, { token });
        assert.equal(response.status, 400, query);
        assert.match(response.headers.get('content-type')!, /^application\/problem\+json/);
        assert.equal(response.body.errors?.[0]?.path, path, `${query}: ${JSON.stringify(response.body)}`);
      }
    });
  });
}
