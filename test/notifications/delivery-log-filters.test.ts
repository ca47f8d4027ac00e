// needs: database
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { countNotifications, insertNotifications, newNotificationRow, type NotificationFilter } from '../../src/storage/repositories/notifications.js';
import type { NotificationsTable } from '../../src/storage/tables/index.js';
import { testDialects } from '../support/databases.js';
import { api, startTestApp, type ClientCredentials, type TestApp } from '../support/test-app.js';

/**
 * GET /notifications filters: `event` and a range of creation times (`since` inclusive, `until`
 * exclusive) beside `subscriptionId`, `requestId` and `status`, in any combination and across
 * pages; and the counts behind GET /subscriptions/{id}/stats (`countNotifications`) name exactly
 * the rows the list pages through, whichever index each reads.
 */
for (const dialect of testDialects()) {
  describe(`delivery log filters [${dialect}]`, () => {
    let t: TestApp;
    let a: ClientCredentials;
    let token: string;
    let other: ClientCredentials;
    const t0 = Date.UTC(2026, 0, 10, 12, 0, 0);
    /** Account A's log, oldest first. */
    const rows: NotificationsTable[] = [];

    type Spec = { at: number; sub: string | null; event?: NotificationsTable['event']; status?: NotificationsTable['status']; test?: boolean; request?: string };
    const row = (accountId: string, spec: Spec) => {
      const notification = newNotificationRow(
        {
          accountId,
          requestId: spec.request ?? 'req_filters_1',
          subscriptionId: spec.sub,
          event: spec.event ?? 'registered-requests',
          url: 'https://example.com/hook',
          payload: '{}',
          test: spec.test,
        },
        spec.at,
      );
      const status = spec.status ?? 'succeeded';
      return { ...notification, status, run_at: status === 'pending' ? spec.at : null, completed_at: status === 'pending' ? null : spec.at };
    };

    before(async () => {
      t = await startTestApp(dialect);
      a = await t.createClientAccount();
      other = await t.createClientAccount();
      token = await t.token(a);
      const specs: Spec[] = [];
      // One a second: 12 notifications of sub_x and sub_y, both events, every status, two test sends, one to a request's own URL.
      for (let i = 0; i < 12; i++) {
        specs.push({
          at: t0 + i * 1000,
          sub: i === 11 ? null : i % 2 === 0 ? 'sub_x' : 'sub_y',
          event: i % 3 === 0 ? 'processed-requests' : 'registered-requests',
          status: i % 4 === 1 ? 'failed' : i % 4 === 2 ? 'pending' : 'succeeded',
          test: i === 6 || i === 9,
          request: i < 6 ? 'req_filters_1' : 'req_filters_2',
        });
      }
      rows.push(...specs.map((spec) => row(a.accountId, spec)));
      await insertNotifications(t.deps.db, rows);
      // Another account, same subscriptions' names, requests and times: never listed or counted for A.
      await insertNotifications(
        t.deps.db,
        specs.map((spec) => row(other.accountId, spec)),
      );
    });
    after(() => t.close());

    const iso = (ms: number) => new Date(ms).toISOString();
    const list = async (query: string) => {
      const response = await api(t.url, 'GET', `/v2/notifications?limit=200&${query}`, { token });
      assert.equal(response.status, 200, `${query}: ${JSON.stringify(response.body)}`);
      return (response.body.data as Array<{ id: string }>).map((n) => n.id);
    };
    /** A's notifications that `keep` accepts, newest first: what the list must answer. */
    const expected = (keep: (row: NotificationsTable, index: number) => boolean) =>
      rows
        .filter(keep)
        .map((r) => r.id)
        .reverse();

    it('filters by event', async () => {
      assert.deepEqual(
        await list('event=processed-requests'),
        expected((r) => r.event === 'processed-requests'),
      );
      assert.deepEqual(
        await list('event=registered-requests'),
        expected((r) => r.event === 'registered-requests'),
      );
    });

    it('filters by creation time: since inclusive, until exclusive, to the millisecond', async () => {
      assert.deepEqual(
        await list(`since=${iso(t0 + 3000)}&until=${iso(t0 + 7000)}`),
        expected((_, i) => i >= 3 && i < 7),
      );
      assert.deepEqual(
        await list(`since=${iso(t0 + 3001)}`),
        expected((_, i) => i >= 4),
      );
      assert.deepEqual(
        await list(`until=${iso(t0 + 2999)}`),
        expected((_, i) => i < 3),
      );
      assert.deepEqual(await list(`since=${iso(t0 + 5000)}&until=${iso(t0 + 5000)}`), []);
      assert.deepEqual(
        await list(`since=${encodeURIComponent('2026-01-10T14:00:05+02:00')}`),
        expected((_, i) => i >= 5),
        'an offset, + percent-encoded',
      );
    });

    it('combines every filter, and keeps them across pages', async () => {
      const combos: Array<[string, (r: NotificationsTable, i: number) => boolean]> = [
        ['subscriptionId=sub_x&event=processed-requests', (r) => r.subscription_id === 'sub_x' && r.event === 'processed-requests'],
        [`subscriptionId=sub_y&status=failed&since=${iso(t0 + 2000)}`, (r, i) => r.subscription_id === 'sub_y' && r.status === 'failed' && i >= 2],
        ['subscriptionId=sub_x&status=pending', (r) => r.subscription_id === 'sub_x' && r.status === 'pending'],
        [`requestId=req_filters_2&event=registered-requests&until=${iso(t0 + 10_000)}`, (r, i) => r.request_id === 'req_filters_2' && r.event === 'registered-requests' && i < 10],
        ['requestId=req_filters_1&status=failed', (r) => r.request_id === 'req_filters_1' && r.status === 'failed'],
        [`status=pending&event=registered-requests&since=${iso(t0)}&until=${iso(t0 + 12_000)}`, (r) => r.status === 'pending' && r.event === 'registered-requests'],
        ['status=failed', (r) => r.status === 'failed'],
      ];
      for (const [query, keep] of combos) {
        const want = expected(keep);
        assert.ok(want.length > 0, `${query} names some rows`);
        assert.deepEqual(await list(query), want, query);
        // One a page: every row once, in order.
        const paged: string[] = [];
        let cursor: string | null = null;
        do {
          const response = await api(t.url, 'GET', `/v2/notifications?limit=1&${query}${cursor ? `&cursor=${cursor}` : ''}`, { token });
          paged.push(...response.body.data.map((n: { id: string }) => n.id));
          cursor = response.body.nextCursor;
        } while (cursor);
        assert.deepEqual(paged, want, `${query}, a page at a time`);
      }
      assert.deepEqual(
        await list('subscriptionId=&requestId='),
        expected(() => true),
        'empty values filter nothing',
      );
    });

    it('counts exactly the rows the list names (test sends included), whatever index each reads', async () => {
      const filters: Array<Omit<NotificationFilter, 'accountId'>> = [
        { subscriptionId: 'sub_x', status: 'pending' },
        { subscriptionId: 'sub_y', status: 'pending' },
        { subscriptionId: 'sub_x', status: 'failed' },
        { subscriptionId: 'sub_y', status: 'failed' },
        { status: 'pending' },
        { requestId: 'req_filters_2', status: 'pending' },
        { subscriptionId: 'sub_y', status: 'pending', since: t0 + 6000, event: 'registered-requests' },
      ];
      const query = (filter: Omit<NotificationFilter, 'accountId'>) =>
        Object.entries(filter)
          .map(([key, value]) => `${key}=${typeof value === 'number' ? iso(value) : value}`)
          .join('&');
      for (const filter of filters) {
        const listed = await list(query(filter));
        assert.equal(await countNotifications(t.deps.db, { accountId: a.accountId, ...filter }), listed.length, query(filter));
      }
      // The test sends are in both: sub_x's test send at 6 s is pending, sub_y's at 9 s failed.
      assert.ok((await list('subscriptionId=sub_x&status=pending')).includes(rows[6]!.id));
      assert.ok((await list('subscriptionId=sub_y&status=failed')).includes(rows[9]!.id));
      assert.equal(await countNotifications(t.deps.db, { accountId: a.accountId, subscriptionId: 'sub_x', status: 'pending' }), 3);
    });

    it('lists, leaves out or lists alone the copies forwarded by rewards listen (listen=include|exclude|only; include when absent)', async () => {
      const c = await t.createClientAccount();
      const cToken = await t.token(c);
      const made = [0, 1, 2, 3].map((i) => ({
        ...row(c.accountId, { at: t0 + i * 1000, sub: i % 2 === 0 ? 'sub_x' : null, request: 'req_listen_1' }),
        ...(i % 2 === 1 ? { url: 'listen:lsn_filters' } : {}),
      }));
      await insertNotifications(t.deps.db, made);
      const ids = async (query: string) => {
        const response = await api(t.url, 'GET', `/v2/notifications?limit=200&${query}`, { token: cToken });
        assert.equal(response.status, 200, `${query}: ${JSON.stringify(response.body)}`);
        return (response.body.data as Array<{ id: string }>).map((n) => n.id);
      };
      const newestFirst = (keep: (url: string) => boolean) =>
        made
          .filter((r) => keep(r.url))
          .map((r) => r.id)
          .reverse();
      const all = newestFirst(() => true);
      const copies = newestFirst((url) => url.startsWith('listen:'));
      const real = newestFirst((url) => !url.startsWith('listen:'));
      assert.deepEqual(await ids(''), all, 'absent: listed with the others, as before the parameter');
      assert.deepEqual(await ids('listen=include'), all);
      assert.deepEqual(await ids('listen=exclude'), real);
      assert.deepEqual(await ids('listen=only'), copies);
      assert.deepEqual(await ids('listen=exclude&requestId=req_listen_1'), real, 'with a request, read by another index');
      assert.deepEqual(await ids('listen=only&requestId=req_listen_1'), copies);
      const bad = await api(t.url, 'GET', '/v2/notifications?listen=no', { token: cToken });
      assert.equal(bad.status, 400);
      assert.equal(bad.body.errors?.[0]?.path, 'querystring.listen');
    });

    it('answers 400 naming the member for an unknown event, a date that is not RFC 3339 and since after until', async () => {
      for (const [query, path] of [
        ['event=registered-request', 'querystring.event'],
        ['event=everything', 'querystring.event'],
        ['since=2026-01-10', 'querystring.since'],
        ['until=soon', 'querystring.until'],
        [`since=${iso(t0 + 1)}&until=${iso(t0)}`, 'querystring.since'],
      ]) {
        const response = await api(t.url, 'GET', `/v2/notifications?${query}`, { token });
        assert.equal(response.status, 400, query);
        assert.equal(response.body.errors?.[0]?.path, path, `${query}: ${JSON.stringify(response.body)}`);
      }
    });
  });
}
