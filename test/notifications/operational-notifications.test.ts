// needs: database
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { RUNS_WITHOUT_OUTCOME, type Delivery } from '../../src/storage/deliveries.js';
import { insertNotifications, newNotificationRow } from '../../src/storage/repositories/notifications.js';
import { notificationDeliverer } from '../../src/worker/notifications/deliver-notification.js';
import { startWorker } from '../../src/worker/start-worker.js';
import type { JobWorker } from '../../src/worker/job-worker.js';
import { testDialects } from '../support/databases.js';
import { tenantWithExperience } from '../support/experiences.js';
import { eventually, verifyWebhook } from '../support/notifications.js';
import { startHttpReceiver, type Receiver } from '../support/receivers.js';
import { api, startTestApp, type TestApp } from '../support/test-app.js';

const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule) as unknown as (ajv: Ajv2020) => Ajv2020;

/**
 * Operational notifications (docs/delivery.md, "Operational notifications"): a subscription to
 * `failed-notification` is told when a notification fails its last attempt, one to
 * `disabled-subscription` when a subscription is switched off; both written in the transaction of
 * the state change, signed like every call, never for test sends or for themselves.
 */
for (const dialect of testDialects()) {
  describe(`operational notifications [${dialect}]`, () => {
    let t: TestApp;
    let worker: JobWorker;
    const receivers: Receiver[] = [];

    before(async () => {
      // No auto-disable here: on a loaded machine two quick attempts can lie further apart than a
      // short SUBSCRIPTION_DISABLE_AFTER, and a switch-off would fail the notification instead of its
      // last attempt. The auto-disable test runs an app of its own.
      t = await startTestApp(dialect, { RETRY_INTERVAL: '40ms', RETRY_MAX_ATTEMPTS: '2', SUBSCRIPTION_DISABLE_AFTER: '0' });
      worker = startWorker(t.deps, { pollIntervalMs: 25 });
    });
    after(async () => {
      await worker.stop();
      await Promise.all(receivers.map((r) => r.close()));
      await t.close();
    });

    const receiver = async (status: number) => {
      const r = await startHttpReceiver(() => ({ status }));
      receivers.push(r);
      return r;
    };
    const tenant = async (app: TestApp = t) => {
      const { client, token } = await tenantWithExperience(app, { prizes: [{ id: 'cpn', value: 1, stock: null }] });
      const subscribe = async (body: Record<string, unknown>) => {
        const created = await api(app.url, 'POST', '/v2/subscriptions', { token, body });
        assert.equal(created.status, 201, JSON.stringify(created.body));
        return created.body as { _id: string; secret: string; event: string };
      };
      const send = async () => {
        const response = await api(app.url, 'POST', '/v2/requests', { token, body: { experience: 'summer' } });
        assert.equal(response.status, 202, JSON.stringify(response.body));
        return response.body.id as string;
      };
      const log = async (query: string) => (await api(app.url, 'GET', `/v2/notifications?limit=100&${query}`, { token })).body.data as any[];
      return { accountId: client.accountId, token, subscribe, send, log };
    };
    /** Whether a body validates against its event's schema in the served OpenAPI document's `webhooks`. */
    const validates = async (event: string, body: unknown) => {
      const doc = (await api(t.url, 'GET', '/openapi.json')).body;
      const ajv = addFormats(new Ajv2020({ strict: false, allErrors: true }));
      ajv.addSchema(doc, 'openapi.json');
      const validate = ajv.compile({ $ref: `openapi.json#/webhooks/${event}/post/requestBody/content/application~1json/schema` });
      return validate(body) || JSON.stringify(validate.errors);
    };
    /** The account's notifications in one statement: one snapshot of the database. */
    const snapshot = async (accountId: string) =>
      (await sql<{ id: string; event: string; status: string; test: number }>`select id, event, status, test from notifications where account_id = ${accountId}`.execute(t.deps.db)).rows;

    it("a notification that fails its last attempt is told, signed, to the account's failed-notification subscriptions, in the same commit", async () => {
      const a = await tenant();
      const b = await tenant();
      const down = await receiver(500);
      const ops = await receiver(200);
      const othersOps = await receiver(200);
      await a.subscribe({ event: 'registered-request', callback: { url: `${down.url}/hook` } });
      const opsSub = await a.subscribe({ event: 'failed-notifications', callback: { url: `${ops.url}/ops` } });
      assert.equal(opsSub.event, 'failed-notification', 'stored singular');
      await b.subscribe({ event: 'failed-notification', callback: { url: `${othersOps.url}/ops` } });

      const requestId = await a.send();
      // Read in one statement each time: the moment the failure is visible, its operational notification is too.
      const seen = await eventually(
        async () => {
          const rows = await snapshot(a.accountId);
          return rows.some((row) => row.event === 'registered-requests' && row.status === 'failed') && rows;
        },
        20_000,
        'the request notification failed',
      );
      assert.equal(seen.filter((row) => row.event === 'failed-notifications').length, 1, 'written in the commit that failed the notification');

      const call = await eventually(() => ops.requests[0], 15_000, 'the operational notification');
      assert.equal(call.headers['x-webhook-event'], 'failed-notifications');
      const body = verifyWebhook(opsSub.secret, call);
      const [failed] = await a.log(`requestId=${requestId}&event=registered-requests`);
      assert.equal(failed.status, 'failed');
      assert.deepEqual(body, {
        notificationId: failed.id,
        requestId,
        event: 'registered-requests',
        url: `${down.url}/hook`,
        attempts: 2,
        lastStatusCode: 500,
        lastError: failed.lastError,
        failedAt: body.failedAt,
      });
      assert.equal(await validates('failed-notifications', body), true);
      assert.ok(Math.abs(Date.parse(String(body.failedAt)) - Date.parse(failed.completedAt)) < 1000, 'failedAt is when it ended');

      // In the delivery log like any notification, under the failed notification's request.
      const operational = await eventually(
        async () => {
          const [entry] = await a.log('event=failed-notifications');
          return entry?.status === 'succeeded' && entry;
        },
        15_000,
        'the operational notification delivered',
      );
      assert.equal(operational.subscriptionId, opsSub._id);
      assert.equal(operational.requestId, requestId);
      assert.equal(operational.id, call.headers['webhook-id']);
      assert.deepEqual(operational.payload, body);
      assert.equal((await a.log(`requestId=${requestId}`)).length, 2);

      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(ops.requests.length, 1);
      assert.equal(othersOps.requests.length, 0, "another account's operational subscription is told nothing");
    });

    it('a notification failed without an attempt (its delivery could not be run) is told too', async () => {
      const a = await tenant();
      const ops = await receiver(200);
      const opsSub = await a.subscribe({ event: 'failed-notification', callback: { url: `${ops.url}/ops` } });
      // Held by a delivery at its last run (leased to this test, not due for an hour: no worker takes it meanwhile).
      const now = Date.now();
      const row = {
        ...newNotificationRow({ accountId: a.accountId, requestId: 'req_exhausted', subscriptionId: null, event: 'processed-requests', url: 'http://127.0.0.1:9/gone', payload: '{}' }, now),
        run_at: now + 3_600_000,
        lease: 'w-test:exhausted',
        lease_until: now + 60_000,
        runs: RUNS_WITHOUT_OUTCOME,
      };
      await insertNotifications(t.deps.db, [row]);
      const delivery: Delivery = { id: row.id, accountId: a.accountId, runs: RUNS_WITHOUT_OUTCOME, lease: row.lease, leaseUntil: row.lease_until, createdAt: now };
      const told = sql<{ n: number | string }>`select count(*) as n from notifications where account_id = ${a.accountId} and event = 'failed-notifications'`;
      assert.equal(Number((await told.execute(t.deps.db)).rows[0]!.n), 0);
      await notificationDeliverer(t.deps).runFailed(delivery, new Error('database unreachable'));
      // runFailed writes both in one transaction; after it, the notification is failed and the account told.
      const failed = await t.deps.db.selectFrom('notifications').select(['status', 'last_error', 'completed_at']).where('id', '=', row.id).executeTakeFirstOrThrow();
      assert.deepEqual({ status: failed.status, last_error: failed.last_error }, { status: 'failed', last_error: 'the delivery could not be run: database unreachable' });
      assert.equal(Number((await told.execute(t.deps.db)).rows[0]!.n), 1, 'written with the failure');
      const call = await eventually(() => ops.requests[0], 15_000, 'the operational notification');
      const body = verifyWebhook(opsSub.secret, call);
      assert.deepEqual(
        { ...body, failedAt: undefined },
        {
          notificationId: row.id,
          requestId: 'req_exhausted',
          event: 'processed-requests',
          url: 'http://127.0.0.1:9/gone',
          attempts: 0,
          lastStatusCode: null,
          lastError: 'the delivery could not be run: database unreachable',
          failedAt: undefined,
        },
      );
      assert.equal(Date.parse(body.failedAt as string), Number(failed.completed_at), 'failed when the notification ended');
      assert.equal(await validates('failed-notifications', body), true);
    });

    it('a failed test send and a failed operational notification are not told', async () => {
      const a = await tenant();
      const down = await receiver(500);
      const opsDown = await receiver(503);
      const sub = await a.subscribe({ event: 'registered-request', callback: { url: `${down.url}/hook` } });
      const opsSub = await a.subscribe({ event: 'failed-notification', callback: { url: `${opsDown.url}/ops` } });

      const test = await api(t.url, 'POST', `/v2/subscriptions/${sub._id}/test`, { token: a.token });
      assert.equal(test.status, 202);
      await eventually(async () => (await api(t.url, 'GET', `/v2/notifications/${test.body.notificationId}`, { token: a.token })).body.status === 'failed', 15_000, 'test send failed');
      // A test send of the operational subscription: a sample body, signed, marked as a test.
      const opsTest = await api(t.url, 'POST', `/v2/subscriptions/${opsSub._id}/test`, { token: a.token });
      assert.equal(opsTest.status, 202);
      const sample = await eventually(() => opsDown.requests[0], 15_000, 'the operational test send');
      assert.equal(sample.headers['x-webhook-test'], 'true');
      assert.equal(sample.headers['x-webhook-event'], 'failed-notifications');
      assert.deepEqual(Object.keys(verifyWebhook(opsSub.secret, sample)).sort(), ['attempts', 'event', 'failedAt', 'lastError', 'lastStatusCode', 'notificationId', 'requestId', 'url']);

      await a.send();
      // The request notification fails, its operational notification is sent twice (503) and fails too.
      await eventually(
        async () => {
          const rows = await snapshot(a.accountId);
          return rows.some((row) => row.event === 'failed-notifications' && row.test === 0 && row.status === 'failed');
        },
        20_000,
        'the operational notification failed',
      );
      await new Promise((resolve) => setTimeout(resolve, 500));
      const rows = await snapshot(a.accountId);
      assert.equal(rows.filter((row) => row.event === 'failed-notifications' && row.test === 0).length, 1, 'neither the test send nor the operational notification was told');
      assert.equal(opsDown.requests.length, 3, 'the test send, then two attempts of the one operational notification');
    });

    it("a subscription switched off is told to the account's disabled-subscription subscriptions, with the notifications it failed", async () => {
      const own = await startTestApp(dialect, { RETRY_INTERVAL: '40ms', RETRY_MAX_ATTEMPTS: '2', SUBSCRIPTION_DISABLE_AFTER: '3s' });
      const ownWorker = startWorker(own.deps, { pollIntervalMs: 25 });
      try {
        const a = await tenant(own);
        const dead = await receiver(500);
        const ops = await receiver(204);
        const opsSub = await a.subscribe({ event: 'disabled-subscription', callback: { url: `${ops.url}/ops` } });
        // A rate limit keeps a backlog pending, so the switch-off fails some notifications.
        const sub = await a.subscribe({ event: 'registered-request', rateLimit: 2, callback: { url: `${dead.url}/dead` } });
        let switchedOff = false;
        for (let i = 0; i < 200 && !switchedOff; i++) {
          await a.send();
          await new Promise((resolve) => setTimeout(resolve, 100));
          // One statement: the switch-off and its notification are visible together.
          const { rows } = await sql<{ active: number; told: number | string }>`select s.active,
              (select count(*) from notifications n where n.account_id = s.account_id and n.event = 'disabled-subscriptions') as told
            from subscriptions s where s.id = ${sub._id}`.execute(own.deps.db);
          switchedOff = Number(rows[0]!.active) === 0;
          assert.equal(Number(rows[0]!.told), switchedOff ? 1 : 0, 'written in the commit that switched it off');
        }
        assert.ok(switchedOff, 'the subscription was switched off');
        const stored = (await api(own.url, 'GET', `/v2/subscriptions/${sub._id}`, { token: a.token })).body;

        const call = await eventually(() => ops.requests[0], 15_000, 'the operational notification');
        assert.equal(call.headers['x-webhook-event'], 'disabled-subscriptions');
        const body = verifyWebhook(opsSub.secret, call);
        const switchedOffFailures = (await a.log(`subscriptionId=${sub._id}`)).filter((n) => /switched off/.test(n.lastError ?? ''));
        assert.ok(switchedOffFailures.length > 0);
        assert.deepEqual(body, {
          subscriptionId: sub._id,
          event: 'registered-request',
          url: `${dead.url}/dead`,
          reason: stored.disabledReason,
          disabledAt: stored.disabledAt,
          failedPending: switchedOffFailures.length,
        });
        assert.equal(await validates('disabled-subscriptions', body), true);
        const [entry] = await a.log('event=disabled-subscriptions');
        assert.equal(entry.requestId, null, 'about no request');
        assert.equal(entry.subscriptionId, opsSub._id);
        assert.equal((await a.log('event=failed-notifications')).length, 0);
      } finally {
        await ownWorker.stop();
        await own.close();
      }
    });

    it('an operational subscription takes no experiences; both names of the events are accepted', async () => {
      const a = await tenant();
      const url = 'http://127.0.0.1:9/ops';
      for (const event of ['failed-notification', 'disabled-subscriptions']) {
        const refused = await api(t.url, 'POST', '/v2/subscriptions', { token: a.token, body: { event, experiences: ['summer'], callback: { url } } });
        assert.equal(refused.status, 400, JSON.stringify(refused.body));
        assert.deepEqual(refused.body.errors, [{ path: 'body.experiences', message: 'experiences apply to request events; leave it empty for an operational event' }]);
      }
      const sub = await a.subscribe({ event: 'registered-request', experiences: ['summer'], callback: { url } });
      const changed = await api(t.url, 'PUT', `/v2/subscriptions/${sub._id}`, { token: a.token, body: { event: 'failed-notification' } });
      assert.equal(changed.status, 400, JSON.stringify(changed.body));
      assert.deepEqual(changed.body.errors, [{ path: 'body.experiences', message: 'experiences apply to request events; leave it empty for an operational event' }]);
      const both = await api(t.url, 'PUT', `/v2/subscriptions/${sub._id}`, { token: a.token, body: { event: 'failed-notifications', experiences: [] } });
      assert.equal(both.status, 200, JSON.stringify(both.body));
      assert.equal(both.body.event, 'failed-notification');
      const listed = await api(t.url, 'GET', '/v2/subscriptions?event=failed-notifications', { token: a.token });
      assert.deepEqual(
        (listed.body as { _id: string }[]).map((s) => s._id),
        [sub._id],
      );
    });
  });
}
