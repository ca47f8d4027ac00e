// needs: database
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { recoverNotifications } from '../../src/services/recover-notifications.js';
import { createSubscription } from '../../src/services/subscriptions.js';
import { startWorker } from '../../src/worker/start-worker.js';
import type { JobWorker } from '../../src/worker/job-worker.js';
import { testDialects } from '../support/databases.js';
import { tenantWithExperience } from '../support/experiences.js';
import { eventually, verifyWebhook } from '../support/notifications.js';
import { gate, startHttpReceiver, type Receiver } from '../support/receivers.js';
import { sendRequests } from '../support/requests.js';
import { api, startTestApp, startTestDatabase, type ClientCredentials, type TestApp, type TestDatabase } from '../support/test-app.js';

/**
 * POST /subscriptions/{id}/recover against real receivers: notifications fail while the receiver
 * is down (RETRY_MAX_ATTEMPTS=2), the receiver comes back, the recovery sends each one once more
 * with its webhook-id and exact body; windows, concurrent calls, batches, errors and tenants.
 */
const DOWN = () => ({ status: 500, body: 'down' });
const UP = () => ({ status: 204 });
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const iso = (ms: number) => new Date(ms).toISOString();

for (const dialect of testDialects()) {
  describe(`recovery of failed notifications [${dialect}]`, () => {
    let t: TestApp;
    let worker: JobWorker;
    const receivers: Receiver[] = [];

    before(async () => {
      t = await startTestApp(dialect, { RETRY_INTERVAL: '50ms', RETRY_MAX_ATTEMPTS: '2' });
      worker = startWorker(t.deps, { pollIntervalMs: 25 });
    });
    after(async () => {
      await worker.stop();
      for (const receiver of receivers) await receiver.close();
      await t.close();
    });

    interface Tenant {
      client: ClientCredentials;
      token: string;
      receiver: Receiver;
      subscription: { _id: string; secret: string };
    }

    /** A fresh account with the `summer` experience and one subscription to a receiver that is down. */
    const tenant = async (): Promise<Tenant> => {
      const { client, token } = await tenantWithExperience(t, { prizes: [{ value: 10, stock: null }] });
      const receiver = await startHttpReceiver(DOWN);
      receivers.push(receiver);
      const created = await api(t.url, 'POST', '/v2/subscriptions', { token, body: { event: 'registered-request', callback: { url: `${receiver.url}/hook` } } });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      return { client, token, receiver, subscription: created.body };
    };

    const notificationsOf = async (tn: Tenant, status?: string): Promise<any[]> => {
      const response = await api(t.url, 'GET', `/v2/notifications?subscriptionId=${tn.subscription._id}&limit=200${status ? `&status=${status}` : ''}`, { token: tn.token });
      assert.equal(response.status, 200, JSON.stringify(response.body));
      return response.body.data;
    };

    /** `count` reward requests whose notifications all end failed (two attempts each); returns their ids. */
    const failNotifications = async (tn: Tenant, count: number): Promise<string[]> => {
      const before = new Set((await notificationsOf(tn)).map((n) => n.id));
      await sendRequests(t.url, tn.token, count, 4);
      const failed = await eventually(
        async () => {
          const fresh = (await notificationsOf(tn)).filter((n) => !before.has(n.id));
          return fresh.length === count && fresh.every((n) => n.status === 'failed') && fresh;
        },
        20_000,
        `${count} failed notifications`,
      ).catch(async (error: Error) => {
        // Where each one stood, so that a run that times out says why.
        const rows = await t.deps.db
          .selectFrom('notifications')
          .select(['id', 'status', 'attempt_count', 'run_at', 'lease', 'lease_until', 'runs', 'waits_for', 'created_at'])
          .where('subscription_id', '=', tn.subscription._id)
          .where('status', '!=', 'failed')
          .execute();
        throw new Error(`${error.message}\nnot failed yet (now ${Date.now()}): ${JSON.stringify(rows)}\nreceiver calls: ${tn.receiver.requests.length}`);
      });
      for (const n of failed) assert.equal(n.attemptCount, 2);
      return failed.map((n) => n.id as string);
    };

    const callsFor = (tn: Tenant, id: string) => tn.receiver.requests.filter((r) => r.headers['webhook-id'] === id);
    const recover = (tn: Tenant, body: unknown, options: { token?: string; query?: string; version?: string; id?: string } = {}) =>
      api(t.url, 'POST', `/${options.version ?? 'v2'}/subscriptions/${options.id ?? tn.subscription._id}/recover${options.query ?? ''}`, { token: options.token ?? tn.token, body });
    const settled = (tn: Tenant, ids: string[], status: string) =>
      eventually(
        async () => {
          const byId = new Map((await notificationsOf(tn)).map((n) => [n.id, n]));
          return ids.every((id) => byId.get(id)?.status === status) && ids.map((id) => byId.get(id));
        },
        20_000,
        `${ids.length} notifications ${status}`,
      );
    const context = () => ({ db: t.deps.db, signals: t.deps.signals, clock: t.deps.clock });

    it('the receiver comes back: each failed notification is sent once more, same webhook-id, identical body bytes, signed', async () => {
      const tn = await tenant();
      const ids = await failNotifications(tn, 5);
      for (const id of ids) assert.equal(callsFor(tn, id).length, 2);
      tn.receiver.respond(UP);

      const recovered = await recover(tn, { since: iso(Date.now() - HOUR) });
      assert.equal(recovered.status, 202, JSON.stringify(recovered.body));
      assert.deepEqual(recovered.body, { recovered: 5 });

      const rows = await settled(tn, ids, 'succeeded');
      await sleep(300); // six retry intervals: nothing more comes
      for (const [index, id] of ids.entries()) {
        const calls = callsFor(tn, id);
        assert.equal(calls.length, 3, `${id}: two failed attempts, one recovered`);
        assert.equal(calls[2]!.body, calls[0]!.body, 'the recovered attempt carries the identical body bytes');
        assert.deepEqual(verifyWebhook(tn.subscription.secret, calls[2]!), JSON.parse(calls[0]!.body));
        assert.equal(rows[index].attemptCount, 3);
        const detail = await api(t.url, 'GET', `/v2/notifications/${id}`, { token: tn.token });
        assert.deepEqual(
          detail.body.attempts.map((a: any) => a.outcome),
          ['retry', 'failed', 'succeeded'],
        );
      }
      assert.deepEqual((await recover(tn, { since: iso(Date.now() - HOUR) })).body, { recovered: 0 }, 'nothing is failed any more');
    });

    it('a recovered notification gets exactly one attempt: if it fails it ends failed again, no retry', async () => {
      const tn = await tenant();
      const ids = await failNotifications(tn, 3);
      const since = iso(Date.now() - HOUR);
      assert.deepEqual((await recover(tn, { since })).body, { recovered: 3 });
      await eventually(() => ids.every((id) => callsFor(tn, id).length === 3), 20_000, 'the recovered attempts');
      const rows = await settled(tn, ids, 'failed');
      await sleep(300); // six retry intervals: no retry comes
      for (const [index, id] of ids.entries()) {
        assert.equal(callsFor(tn, id).length, 3);
        assert.equal(rows[index].attemptCount, 3);
        const detail = await api(t.url, 'GET', `/v2/notifications/${id}`, { token: tn.token });
        assert.deepEqual(
          detail.body.attempts.map((a: any) => a.outcome),
          ['retry', 'failed', 'failed'],
        );
      }
    });

    it('the window [since, until) takes only the failures completed inside it', async () => {
      const tn = await tenant();
      const start = Date.now();
      const early = await failNotifications(tn, 3);
      const earlyDone = Math.max(...(await notificationsOf(tn)).map((n) => Date.parse(n.completedAt)));
      await sleep(20);
      const late = await failNotifications(tn, 2);
      const lateFirst = Math.min(...(await notificationsOf(tn)).filter((n) => late.includes(n.id)).map((n) => Date.parse(n.completedAt)));
      assert.ok(lateFirst > earlyDone);
      tn.receiver.respond(UP);

      // since = just after the early failures: only the late ones.
      assert.deepEqual((await recover(tn, { since: iso(earlyDone + 1) })).body, { recovered: 2 });
      await settled(tn, late, 'succeeded');
      await sleep(200);
      for (const id of early) assert.equal(callsFor(tn, id).length, 2, 'an early failure is outside the window');
      assert.deepEqual((await notificationsOf(tn, 'failed')).map((n) => n.id).sort(), [...early].sort());

      // until = just after the early failures (exclusive): the early ones. A window that ends before them: none.
      assert.deepEqual((await recover(tn, { since: iso(start - HOUR), until: iso(start) })).body, { recovered: 0 });
      assert.deepEqual((await recover(tn, { since: iso(start - HOUR), until: iso(earlyDone + 1) })).body, { recovered: 3 });
      await settled(tn, [...early, ...late], 'succeeded');
      await sleep(200);
      for (const id of [...early, ...late]) assert.equal(callsFor(tn, id).length, 3, `${id} sent once more, not twice`);
    });

    it('two calls at once for overlapping windows: each notification is taken by one of them and sent once', async () => {
      const tn = await tenant();
      const ids = await failNotifications(tn, 12);
      tn.receiver.respond(UP);
      const [one, two] = await Promise.all([recover(tn, { since: iso(Date.now() - HOUR) }), recover(tn, { since: iso(Date.now() - 2 * HOUR), until: iso(Date.now() + HOUR) })]);
      assert.equal(one.status, 202, JSON.stringify(one.body));
      assert.equal(two.status, 202, JSON.stringify(two.body));
      assert.equal(one.body.recovered + two.body.recovered, 12, `recovered ${one.body.recovered} + ${two.body.recovered}`);
      await settled(tn, ids, 'succeeded');
      await sleep(300);
      for (const id of ids) assert.equal(callsFor(tn, id).length, 3, `${id}: one recovered attempt`);
    });

    it('a second call while the recovered attempts are in flight takes nothing; each is sent once', async () => {
      const tn = await tenant();
      const ids = await failNotifications(tn, 10);
      const held = gate();
      tn.receiver.respond(async () => {
        await held.wait;
        return { status: 204 };
      });
      const since = iso(Date.now() - HOUR);
      assert.deepEqual((await recover(tn, { since })).body, { recovered: 10 });
      // The receiver holds the answers: the attempts are in flight (or waiting for a connection).
      await eventually(() => tn.receiver.requests.length > 20, 10_000, 'the first recovered attempt to arrive');
      assert.deepEqual((await recover(tn, { since })).body, { recovered: 0 });
      held.open();
      await settled(tn, ids, 'succeeded');
      assert.deepEqual((await recover(tn, { since })).body, { recovered: 0 });
      await sleep(300);
      for (const id of ids) assert.equal(callsFor(tn, id).length, 3, `${id}: one recovered attempt`);
    });

    it('batches: 3 per transaction over 4 pages takes each of 10 notifications once; three such calls at once share them', async () => {
      const tn = await tenant();
      const ids = await failNotifications(tn, 10);
      tn.receiver.respond(UP);
      const window = { since: iso(Date.now() - HOUR) };
      const recovered = await recoverNotifications(context(), tn.client.accountId, tn.subscription._id, window, { batchSize: 3 });
      assert.equal(recovered, 10);
      await settled(tn, ids, 'succeeded');

      // Fail them all once more (new failures, later than the first window's end), then two concurrent small-batch calls.
      tn.receiver.respond(DOWN);
      const more = await failNotifications(tn, 10);
      tn.receiver.respond(UP);
      const since = iso(Date.now() - HOUR);
      const all = await Promise.all([2, 3, 4].map((batchSize) => recoverNotifications(context(), tn.client.accountId, tn.subscription._id, { since }, { batchSize })));
      assert.equal(
        all.reduce((sum, n) => sum! + n!, 0),
        10,
        `recovered ${all.join(' + ')}`,
      );
      await settled(tn, more, 'succeeded');
      await sleep(300);
      for (const id of [...ids, ...more]) assert.equal(callsFor(tn, id).length, 3, `${id}: one recovered attempt`);
    });

    it('test sends are not recovered', async () => {
      const tn = await tenant();
      const sent = await api(t.url, 'POST', `/v2/subscriptions/${tn.subscription._id}/test`, { token: tn.token });
      assert.equal(sent.status, 202);
      const ids = await failNotifications(tn, 2);
      const testId = sent.body.notificationId as string;
      await settled(tn, [testId], 'failed');
      tn.receiver.respond(UP);
      assert.deepEqual((await recover(tn, { since: iso(Date.now() - HOUR) })).body, { recovered: 2 });
      await settled(tn, ids, 'succeeded');
      await sleep(200);
      assert.equal(callsFor(tn, testId).length, 1, 'the test send keeps its single attempt');
      assert.deepEqual(
        (await notificationsOf(tn, 'failed')).map((n) => n.id),
        [testId],
      );
    });

    it('an inactive subscription is a 409 that says, in words, to switch it on first; nothing is taken until it is', async () => {
      const tn = await tenant();
      const ids = await failNotifications(tn, 2);
      tn.receiver.respond(UP);
      const off = await api(t.url, 'PUT', `/v2/subscriptions/${tn.subscription._id}`, { token: tn.token, body: { active: false } });
      assert.equal(off.status, 200);
      const refused = await recover(tn, { since: iso(Date.now() - HOUR) });
      assert.equal(refused.status, 409, JSON.stringify(refused.body));
      assert.equal(refused.body.detail, 'the subscription is switched off; switch it on, then recover');
      assert.equal((await notificationsOf(tn, 'failed')).length, 2, 'nothing was taken');
      await api(t.url, 'PUT', `/v2/subscriptions/${tn.subscription._id}`, { token: tn.token, body: { active: true } });
      assert.deepEqual((await recover(tn, { since: iso(Date.now() - HOUR) })).body, { recovered: 2 });
      await settled(tn, ids, 'succeeded');
    });

    it('bad windows are 400 problems naming the member; nothing is taken', async () => {
      const tn = await tenant();
      const now = Date.now(); // before the failure below
      const ids = await failNotifications(tn, 1);
      const cases: Array<[unknown, string, RegExp?]> = [
        [{ since: iso(now - HOUR), until: iso(now - 2 * HOUR) }, 'body.since', /after until/],
        [{ since: iso(now - 31 * DAY) }, 'body.since', /^must be at most 30 days ago$/],
        [{ since: iso(now - 40 * DAY), until: iso(now - 9 * DAY) }, 'body.since', /^must be at most 30 days before until$/],
        [{ since: iso(now + HOUR) }, 'body.since', /future/],
        [{ since: 'yesterday' }, 'body.since', /date-time/],
        [{ since: '2025-13-01T00:00:00Z' }, 'body.since', /date-time/],
        [{ since: iso(now - HOUR), until: 'now' }, 'body.until', /date-time/],
        [{ since: 1_700_000_000_000 }, 'body.since'],
        [{ until: iso(now) }, 'body.since', /required/],
        [{ since: iso(now - HOUR), extra: 1 }, 'body.extra'],
      ];
      for (const [body, path, message] of cases) {
        const response = await recover(tn, body);
        assert.equal(response.status, 400, `${JSON.stringify(body)}: ${JSON.stringify(response.body)}`);
        assert.match(String(response.headers.get('content-type')), /^application\/problem\+json/);
        assert.equal(response.body.errors?.[0]?.path, path, JSON.stringify(response.body));
        if (message) assert.match(response.body.errors[0].message, message, JSON.stringify(response.body));
      }
      assert.equal((await recover(tn, undefined)).status, 400, 'no body');
      // Exactly 30 days is allowed.
      assert.deepEqual((await recover(tn, { since: iso(now - 30 * DAY), until: iso(now) })).body, { recovered: 0 }, 'until before the failure');
      assert.deepEqual(
        (await notificationsOf(tn, 'failed')).map((n) => n.id),
        ids,
      );
    });

    it("unknown and other accounts' subscriptions are 404, read-only 403; operators act with ?accountId=; /v1 and the OpenAPI document have it", async () => {
      const mine = await tenant();
      const theirs = await tenant();
      const theirIds = await failNotifications(theirs, 2);
      const since = iso(Date.now() - HOUR);
      const readOnly = await t.token(mine.client, 'subscriptions:read');
      const operator = await t.token(t.operator, 'admin');

      assert.equal((await recover(mine, { since }, { id: 'sub_unknown' })).status, 404);
      const foreign = await recover(mine, { since }, { id: theirs.subscription._id });
      assert.equal(foreign.status, 404);
      assert.match(String(foreign.headers.get('content-type')), /^application\/problem\+json/);
      assert.equal((await recover(mine, { since }, { query: `?accountId=${theirs.client.accountId}` })).status, 404, 'a client cannot act for another account');
      assert.equal((await recover(mine, { since }, { token: readOnly })).status, 403);
      assert.equal((await recover(theirs, { since }, { token: operator })).status, 404, "the operator's own account has no such subscription");
      await sleep(200);
      for (const id of theirIds) assert.equal(callsFor(theirs, id).length, 2, 'nothing was sent for them');

      theirs.receiver.respond(UP);
      const byOperator = await recover(theirs, { since }, { token: operator, query: `?accountId=${theirs.client.accountId}`, version: 'v1' });
      assert.equal(byOperator.status, 202, JSON.stringify(byOperator.body));
      assert.deepEqual(byOperator.body, { recovered: 2 });
      await settled(theirs, theirIds, 'succeeded');

      const documented = (await api(t.url, 'GET', '/openapi.json')).body.paths['/v2/subscriptions/{subscriptionId}/recover'];
      assert.ok(documented?.post?.responses?.['202'], 'documented with its 202');
      assert.ok(documented.post.requestBody, 'documented with its body');
    });
  });

  describe(`recovery under concurrent calls, 20,000 failed notifications a round [${dialect}]`, () => {
    let d: TestDatabase;
    before(async () => {
      d = await startTestDatabase(dialect);
    });
    after(() => d.close());

    // PostgreSQL: with an earlier page UPDATE (`where id in (select jsonb_array_elements_text(…))`,
    // no advisory lock) this scenario deadlocked within five rounds, and on this fresh, not yet
    // analyzed table each page took seconds (a nested loop over the list): this test took 24 s.
    it('six calls at once with pages of different sizes: no deadlock, each notification taken once and due again', async () => {
      const client = await d.createClientAccount();
      const now = Date.now();
      const { subscription } = await createSubscription({ db: d.deps.db, box: d.deps.box, allowPrivateNetworks: true, now }, client.accountId, {
        event: 'registered-request',
        callback: { url: 'http://127.0.0.1:9/hook' },
      });
      const ctx = { db: d.deps.db, signals: d.deps.signals, clock: Date.now };
      const rounds = dialect === 'postgres' ? 5 : 2;
      for (let round = 0; round < rounds; round++) {
        const base = Date.now() - 60_000;
        // Four to a millisecond: keyset ties straddle the pages.
        const rows = sql`select 'msg_r' || ${String(round)} || '_' || g, ${client.accountId}, 'req_r', ${subscription.id}, 'registered-requests', 'http://127.0.0.1:9/hook', '{}', 'failed', 2, cast(${base} as bigint), cast(${base} as bigint), cast(${base} as bigint) + g / 4, 0`;
        const columns = sql`notifications (id, account_id, request_id, subscription_id, event, url, payload, status, attempt_count, created_at, updated_at, completed_at, test)`;
        if (dialect === 'postgres') await sql`insert into ${columns} ${rows} from generate_series(1, 20000) g`.execute(d.deps.db);
        else await sql`with recursive s(g) as (select 1 union all select g + 1 from s where g < 20000) insert into ${columns} ${rows} from s`.execute(d.deps.db);
        const windows = [{ since: new Date(base - 1000).toISOString() }, { since: new Date(base + 2000).toISOString() }];
        const taken = await Promise.all([997, 1000, 1003, 500, 250, 1500].map((batchSize, i) => recoverNotifications(ctx, client.accountId, subscription.id, windows[i % 2]!, { batchSize })));
        assert.equal(
          taken.reduce((sum, n) => sum! + n!, 0),
          20_000,
          `round ${round}: ${taken.join(' + ')}`,
        );
        const count = async (query: ReturnType<typeof sql<{ n: number | string }>>) => Number((await query.execute(d.deps.db)).rows[0]!.n);
        assert.equal(await count(sql`select count(*) as n from notifications where id like ${`msg_r${round}_%`} and status = 'pending' and run_at is not null`), 20_000, 'each due again');
        assert.equal(await count(sql`select count(*) as n from notifications where status = 'failed'`), 0);
      }
    });
  });
}
