// needs: database
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startWorker } from '../../src/worker/start-worker.js';
import type { JobWorker } from '../../src/worker/job-worker.js';
import { testDialects } from '../support/databases.js';
import { insertExperience, tenantWithExperience } from '../support/experiences.js';
import { eventually, notificationTenant, verifyWebhook } from '../support/notifications.js';
import { startHttpReceiver, type Receiver, type Reply } from '../support/receivers.js';
import { api, startTestApp, type ClientCredentials, type TestApp } from '../support/test-app.js';

for (const dialect of testDialects()) {
  describe(`notification delivery end to end [${dialect}]`, () => {
    let t: TestApp;
    let worker: JobWorker;
    let receiver: Receiver;
    let client: ClientCredentials;
    let token: string;

    /** A fresh account with the `summer` experience: tests never see each other's subscriptions. */
    const tenant = async () => {
      ({ client, token } = await tenantWithExperience(t, {
        title: 'Summer campaign',
        prizes: [
          { id: 'cpn-10', bucket: 'coupons', value: 10, quantity: 1, kind: 'coupon', stock: 5 },
          { id: 'gone', bucket: 'tv', value: 0, quantity: 1, kind: 'physical', stock: 0 },
        ],
      }));
    };

    before(async () => {
      t = await startTestApp(dialect, { RETRY_INTERVAL: '50ms', RETRY_MAX_ATTEMPTS: '4' });
      worker = startWorker(t.deps, { pollIntervalMs: 25 });
      receiver = await startHttpReceiver();
    });
    after(async () => {
      await worker.stop();
      await receiver.close();
      await t.close();
    });

    const subscribe = async (body: Record<string, unknown>) => {
      const created = await api(t.url, 'POST', '/v2/subscriptions', { token, body });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      return created.body as { _id: string; secret: string };
    };
    const send = async (body: Record<string, unknown>) => {
      const response = await api(t.url, 'POST', '/v2/requests', { token, body });
      assert.equal(response.status, 202, JSON.stringify(response.body));
      return response.body.id as string;
    };
    const received = (requestId: string, event: string) => receiver.requests.filter((r) => r.headers['x-webhook-event'] === event && JSON.parse(r.body).id === requestId);

    it('account-wide subscriptions get both events with the exact seed bodies, signed, with auth and custom headers', async () => {
      await tenant();
      const registered = await subscribe({
        event: 'registered-request',
        description: 'all registrations',
        experiences: [],
        callback: { url: `${receiver.url}/registered`, authorization: { Bearer: 'receiver-token' }, customHeaders: { 'X-Tenant': 'acme' } },
      });
      const processed = await subscribe({ event: 'processed-requests', callback: { url: `${receiver.url}/processed` } });
      const requestId = await send({ experience: 'summer', event: 'purchase', data: { orderId: 'o-1' } });

      const [reg] = await eventually(() => received(requestId, 'registered-requests').length === 1 && received(requestId, 'registered-requests'), 15_000, 'registered-requests');
      assert.equal(reg!.path, '/registered');
      assert.deepEqual(verifyWebhook(registered.secret, reg!), { id: requestId, rewardValue: 10 });
      assert.deepEqual(JSON.parse(reg!.body), { id: requestId, rewardValue: 10 });
      assert.equal(reg!.headers.authorization, 'Bearer receiver-token');
      assert.equal(reg!.headers['x-tenant'], 'acme');
      assert.equal(reg!.headers['content-type'], 'application/json');
      assert.match(String(reg!.headers['user-agent']), /RewardRequestService/);
      assert.match(String(reg!.headers['webhook-id']), /^msg_/);

      const [proc] = await eventually(() => received(requestId, 'processed-requests').length === 1 && received(requestId, 'processed-requests'), 15_000, 'processed-requests');
      const body = verifyWebhook(processed.secret, proc!) as any;
      assert.deepEqual(Object.keys(body).sort(), ['canceled', 'concluded', 'delivered', 'id', 'rewardValue']);
      assert.equal(body.id, requestId);
      assert.equal(body.rewardValue, 10);
      assert.match(body.concluded, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
      assert.equal(body.delivered.length, 1);
      const [delivered] = body.delivered;
      assert.equal(delivered.value, 10);
      assert.equal(delivered.quantity, 1);
      assert.equal(delivered.name, 'summer');
      assert.equal(delivered.title, 'Summer campaign');
      assert.equal(delivered.deliveryDetail.forwarded, false);
      assert.equal(delivered.deliveryDetail.info.name, 'delivered');
      assert.equal(delivered.deliveryDetail.info.requestId, requestId);
      assert.equal(delivered.deliveryDetail.info.rewardId, 'cpn-10');
      assert.equal(delivered.deliveryDetail.info.triggerId, 'purchase');
      assert.equal(delivered.deliveryDetail.info.bucket, 'coupons');
      assert.equal(typeof delivered.deliveryDetail.info.coupon, 'string');
      assert.equal(body.canceled.length, 1);
      const [canceled] = body.canceled;
      assert.equal(canceled.priceless, true);
      assert.equal(canceled.deliveryDetail.info.name, 'canceled');
      assert.equal(typeof canceled.deliveryDetail.info.reasonCode, 'number');
      assert.equal(proc!.headers.authorization, undefined, 'the processed subscription has no authorization');

      // Delivery log: one succeeded notification per event, with its attempt.
      // (the attempt is logged right after the receiver answers, so wait for the log to catch up)
      const log = await eventually(
        async () => {
          const response = await api(t.url, 'GET', `/v2/notifications?requestId=${requestId}`, { token });
          return response.body.data.every((n: any) => n.status === 'succeeded') && response;
        },
        15_000,
        'delivery log',
      );
      assert.equal(log.status, 200);
      assert.equal(log.body.data.length, 2);
      assert.ok(log.body.data.every((n: any) => n.attemptCount === 1));
      const detail = await api(t.url, 'GET', `/v2/notifications/${String(reg!.headers['webhook-id'])}`, { token });
      assert.equal(detail.status, 200);
      assert.equal(detail.body.attempts.length, 1);
      assert.equal(detail.body.attempts[0].statusCode, 204);
      await api(t.url, 'DELETE', `/v2/subscriptions/${registered._id}`, { token });
      await api(t.url, 'DELETE', `/v2/subscriptions/${processed._id}`, { token });
    });

    it('a rejected request notifies registered-requests with errorCode and message only', async () => {
      await tenant();
      const sub = await subscribe({ event: 'registered-request', callback: { url: `${receiver.url}/rejections` } });
      const requestId = await send({ experience: 'no-such-campaign' });
      const [reg] = await eventually(() => received(requestId, 'registered-requests').length === 1 && received(requestId, 'registered-requests'), 15_000, 'rejection');
      const body = verifyWebhook(sub.secret, reg!);
      assert.deepEqual(Object.keys(body).sort(), ['errorCode', 'id', 'message']);
      assert.equal(body.errorCode, 'EXPERIENCE_NOT_FOUND');
      await api(t.url, 'DELETE', `/v2/subscriptions/${sub._id}`, { token });
    });

    it('routing: the per-request URL wins (signed with the account default secret); per-experience beats account-wide; inactive per-experience skips', async () => {
      await tenant();
      const wide = await subscribe({ event: 'registered-request', callback: { url: `${receiver.url}/wide` } });
      const perExperience = await subscribe({ event: 'registered-request', experiences: ['summer'], callback: { url: `${receiver.url}/summer` } });
      const defaultSecret = (await api(t.url, 'GET', '/v2/signing-secret', { token })).body.secret as string;

      const own = await send({ experience: 'summer', registeredCallbackUrl: `${receiver.url}/own` });
      const [ownCall] = await eventually(() => received(own, 'registered-requests').length > 0 && received(own, 'registered-requests'), 15_000, 'own URL');
      assert.equal(ownCall!.path, '/own');
      verifyWebhook(defaultSecret, ownCall!);

      const viaExperience = await send({ experience: 'summer' });
      const [expCall] = await eventually(() => received(viaExperience, 'registered-requests').length > 0 && received(viaExperience, 'registered-requests'), 15_000, 'per-experience');
      assert.equal(expCall!.path, '/summer');

      // Deactivating the only per-experience subscription skips the event for that experience.
      assert.equal((await api(t.url, 'PUT', `/v2/subscriptions/${perExperience._id}`, { token, body: { active: false } })).status, 200);
      const skipped = await send({ experience: 'summer' });
      await eventually(async () => (await api(t.url, 'GET', `/v2/requests/${skipped}`, { token })).body.status === 'processed', 15_000, 'processing');
      assert.equal(received(skipped, 'registered-requests').length, 0);
      assert.equal((await api(t.url, 'GET', `/v2/notifications?requestId=${skipped}`, { token })).body.data.length, 0);

      // Another experience falls back to the account-wide subscription.
      await insertExperience(t.deps.db, client.accountId, { name: 'winter', prizes: [{ value: 1 }] });
      const wider = await send({ experience: 'winter' });
      const [wideCall] = await eventually(() => received(wider, 'registered-requests').length > 0 && received(wider, 'registered-requests'), 15_000, 'account-wide');
      assert.equal(wideCall!.path, '/wide');
      for (const s of [wide, perExperience]) await api(t.url, 'DELETE', `/v2/subscriptions/${s._id}`, { token });
    });

    it('retries: two failures then success is exactly 3 attempts with one webhook-id; always failing ends failed after RETRY_MAX_ATTEMPTS; manual retry sends one more', async () => {
      await tenant();
      const flaky = await startHttpReceiver((_request, index) => ({ status: index < 2 ? 503 : 204 }));
      const broken = await startHttpReceiver(() => ({ status: 500, body: 'boom' }));
      try {
        const sub = await subscribe({ event: 'registered-request', experiences: ['summer'], callback: { url: `${flaky.url}/hook` } });
        const requestId = await send({ experience: 'summer' });
        await eventually(() => flaky.requests.length >= 3, 15_000, 'three attempts');
        const log = await eventually(
          async () => {
            const body = (await api(t.url, 'GET', `/v2/notifications?requestId=${requestId}&subscriptionId=${sub._id}`, { token })).body;
            return body.data[0]?.status === 'succeeded' && body;
          },
          15_000,
          'succeeded',
        );
        assert.equal(log.data[0].attemptCount, 3);
        assert.equal(new Set(flaky.requests.map((r) => r.headers['webhook-id'])).size, 1);
        assert.equal(flaky.requests.length, 3);
        for (const r of flaky.requests) verifyWebhook(sub.secret, r);

        await api(t.url, 'PUT', `/v2/subscriptions/${sub._id}`, { token, body: { callback: { url: `${broken.url}/hook` } } });
        const failing = await send({ experience: 'summer' });
        const failed = await eventually(
          async () => {
            const body = (await api(t.url, 'GET', `/v2/notifications?requestId=${failing}&subscriptionId=${sub._id}`, { token })).body;
            return body.data[0]?.status === 'failed' && body.data[0];
          },
          15_000,
          'failed',
        );
        assert.equal(failed.attemptCount, 4);
        assert.equal(broken.requests.length, 4);
        const detail = (await api(t.url, 'GET', `/v2/notifications/${failed.id}`, { token })).body;
        assert.deepEqual(
          detail.attempts.map((a: any) => a.outcome),
          ['retry', 'retry', 'retry', 'failed'],
        );
        assert.ok(detail.attempts.every((a: any) => a.statusCode === 500 && a.responseBody === 'boom'));

        broken.respond(() => ({ status: 200 }));
        const retried = await api(t.url, 'POST', `/v2/notifications/${failed.id}/retry`, { token });
        assert.equal(retried.status, 202);
        assert.equal(retried.body.status, 'pending');
        await eventually(async () => (await api(t.url, 'GET', `/v2/notifications/${failed.id}`, { token })).body.status === 'succeeded', 15_000, 'manual retry');
        assert.equal(broken.requests.length, 5);
        assert.equal(broken.requests[4]!.headers['webhook-id'], failed.id);
        await api(t.url, 'DELETE', `/v2/subscriptions/${sub._id}`, { token });
      } finally {
        await flaky.close();
        await broken.close();
      }
    });

    it('a receiver answering 500 with a binary body gets exactly one call per logged attempt; the body is logged with NUL replaced', async () => {
      await tenant();
      // Before: PostgreSQL refused the NUL in the logged answer, the attempt was not recorded and
      // its job was retried, so the receiver got more calls than the attempts allowed.
      const binary = await startHttpReceiver(() => ({ status: 500, body: 'bin\u0000ary\u0000' }));
      try {
        const requestId = await send({ experience: 'summer', registeredCallbackUrl: `${binary.url}/registered` });
        const failed = await eventually(
          async () => {
            const body = (await api(t.url, 'GET', `/v2/notifications?requestId=${requestId}`, { token })).body;
            return body.data.find((n: any) => n.event === 'registered-requests' && n.status === 'failed');
          },
          15_000,
          'failed',
        );
        const detail = (await api(t.url, 'GET', `/v2/notifications/${failed.id}`, { token })).body;
        assert.equal(detail.attempts.length, 4);
        assert.ok(detail.attempts.every((a: any) => a.responseBody === 'bin\uFFFDary\uFFFD'));
        // Give a job-level retry (1 s after a failed bookkeeping commit) the time to show up.
        await new Promise((resolve) => setTimeout(resolve, 1500));
        assert.equal(binary.requests.length, 4);
      } finally {
        await binary.close();
      }
    });

    it('another account sees none of these notifications', async () => {
      await tenant();
      await subscribe({ event: 'registered-request', callback: { url: `${receiver.url}/isolation` } });
      const requestId = await send({ experience: 'summer' });
      await eventually(() => received(requestId, 'registered-requests').length > 0, 15_000, 'a notification');
      const other = await t.createClientAccount();
      const otherToken = await t.token(other);
      const mine = (await api(t.url, 'GET', '/v2/notifications', { token })).body.data;
      assert.ok(mine.length > 0);
      assert.deepEqual((await api(t.url, 'GET', '/v2/notifications', { token: otherToken })).body.data, []);
      assert.equal((await api(t.url, 'GET', `/v2/notifications/${mine[0].id}`, { token: otherToken })).status, 404);
      assert.equal((await api(t.url, 'POST', `/v2/notifications/${mine[0].id}/retry`, { token: otherToken })).status, 404);
    });
  });
}

for (const dialect of testDialects()) {
  describe(`retries are spread by the jitter [${dialect}]`, () => {
    let t: TestApp;
    let worker: JobWorker;
    let receiver: Receiver;
    before(async () => {
      t = await startTestApp(dialect, { RETRY_INTERVAL: '1h', RETRY_MAX_ATTEMPTS: '3' });
      worker = startWorker(t.deps, { pollIntervalMs: 25 });
      receiver = await startHttpReceiver(() => ({ status: 503 }));
    });
    after(async () => {
      await worker.stop();
      await receiver.close();
      await t.close();
    });

    it('each failed notification waits RETRY_INTERVAL ± 20 %, drawn per notification', async () => {
      const client = await t.createClientAccount();
      const token = await t.token(client);
      await insertExperience(t.deps.db, client.accountId, { name: 'summer', prizes: [{ id: 'cpn', value: 10, stock: null }] });
      const created = await api(t.url, 'POST', '/v2/subscriptions', { token, body: { event: 'registered-requests', callback: { url: `${receiver.url}/down` } } });
      assert.equal(created.status, 201);
      for (let i = 0; i < 12; i++) assert.equal((await api(t.url, 'POST', '/v2/requests', { token, body: { experience: 'summer' } })).status, 202);
      const waiting = await eventually(
        async () => {
          const page = (await api(t.url, 'GET', `/v2/notifications?subscriptionId=${created.body._id}&limit=50`, { token })).body.data;
          return page.length === 12 && page.every((n: any) => n.attemptCount === 1 && n.nextAttemptAt !== null) && page;
        },
        15_000,
        'twelve notifications waiting for their second attempt',
      );
      const hour = 3_600_000;
      const delays = [];
      for (const notification of waiting) {
        const detail = (await api(t.url, 'GET', `/v2/notifications/${notification.id}`, { token })).body;
        const delay = Date.parse(notification.nextAttemptAt) - Date.parse(detail.attempts[0].at);
        assert.ok(delay >= 0.8 * hour && delay <= 1.2 * hour + 5_000, `${notification.id}: ${delay} ms`);
        delays.push(delay);
      }
      // Drawn per notification: twelve failures in one burst do not come back together.
      assert.ok(Math.max(...delays) - Math.min(...delays) > 60_000, JSON.stringify(delays));
    });
  });
}

for (const dialect of testDialects()) {
  describe(`the delivery log shows each answer's Retry-After and the next attempt's time [${dialect}]`, () => {
    // Retries 24 to 36 s after a failure: no second automatic attempt comes while a test looks.
    const INTERVAL = 30_000;
    let t: TestApp;
    let worker: JobWorker;
    let receiver: Receiver;
    /** What the receiver answers, by path: each test's subscription has its own. */
    const replies = new Map<string, Reply>();
    before(async () => {
      t = await startTestApp(dialect, { RETRY_INTERVAL: `${INTERVAL}ms`, RETRY_MAX_ATTEMPTS: '3' });
      worker = startWorker(t.deps, { pollIntervalMs: 25 });
      receiver = await startHttpReceiver((request) => replies.get(request.path) ?? { status: 204 });
    });
    after(async () => {
      await worker.stop();
      await receiver.close();
      await t.close();
    });

    /** A subscription answered with `reply`, one request, and its notification once it has `attempts` attempts and is not in flight. */
    const deliveredOnce = async (path: string, reply: Reply) => {
      replies.set(path, reply);
      const { token, subscribe, send } = await notificationTenant(t);
      await subscribe({ url: `${receiver.url}${path}` });
      const requestId = await send();
      const detail = async () => {
        const listed = (await api(t.url, 'GET', `/v2/notifications?requestId=${requestId}`, { token })).body.data[0];
        return listed && (await api(t.url, 'GET', `/v2/notifications/${listed.id}`, { token })).body;
      };
      const settled = (attempts: number) =>
        eventually(async () => ((d) => d?.attempts.length === attempts && (d.status !== 'pending' || d.nextAttemptAt !== null) && d)(await detail()), 15_000, `attempt ${attempts} on ${path}`);
      return { token, settled, first: await settled(1) };
    };
    /** When the worker scheduled the notification's next attempt: its row's run_at. */
    const scheduled = async (id: string) => {
      const row = await t.deps.db.selectFrom('notifications').select(['run_at', 'lease']).where('id', '=', id).executeTakeFirstOrThrow();
      assert.equal(row.lease, null, 'not in flight');
      return row.run_at === null ? null : new Date(Number(row.run_at)).toISOString();
    };
    /**
     * The next attempt is due between `min` and `max` after the attempt's start, plus the time the
     * attempt took (the delay runs from its answer; a loaded machine takes seconds to prepare a call).
     */
    const assertDelay = (notification: any, min: number, max: number) => {
      const delay = Date.parse(notification.nextAttemptAt) - Date.parse(notification.attempts[0].at);
      assert.ok(delay >= min && delay <= max + 10_000, `${notification.id}: next attempt ${delay} ms after the attempt, not in [${min}, ${max}]`);
    };

    it('503 with Retry-After: 120: the attempt shows "120", the next attempt is due 120 s after it; a manual retry keeps that time; once delivered there is none', async () => {
      const { token, settled, first } = await deliveredOnce('/busy', { status: 503, headers: { 'retry-after': '120' }, body: 'busy' });
      assert.equal(first.status, 'pending');
      assert.equal(first.attempts[0].statusCode, 503);
      assert.equal(first.attempts[0].retryAfter, '120');
      assertDelay(first, 120_000, 120_000);
      assert.equal(first.nextAttemptAt, await scheduled(first.id), 'the time the worker scheduled');
      const listed = (await api(t.url, 'GET', `/v2/notifications?requestId=${first.requestId}`, { token })).body.data[0];
      assert.equal(listed.nextAttemptAt, first.nextAttemptAt, 'the list shows the same time');

      // A manual attempt answered the same: recorded with its Retry-After, the schedule unchanged.
      assert.equal((await api(t.url, 'POST', `/v2/notifications/${first.id}/retry`, { token })).status, 202);
      const second = await settled(2);
      assert.equal(second.attempts[1].retryAfter, '120');
      assert.equal(second.nextAttemptAt, first.nextAttemptAt, "a manual attempt's Retry-After does not move the automatic one");
      assert.equal(second.nextAttemptAt, await scheduled(first.id));

      replies.set('/busy', { status: 204 });
      assert.equal((await api(t.url, 'POST', `/v2/notifications/${first.id}/retry`, { token })).status, 202);
      const delivered = await settled(3);
      assert.equal(delivered.status, 'succeeded');
      assert.equal(delivered.attempts[2].retryAfter, null);
      assert.equal(delivered.nextAttemptAt, null, 'nothing scheduled once delivered');
      assert.equal(await scheduled(first.id), null);
    });

    it('500 without Retry-After: null, and the next attempt is RETRY_INTERVAL ± 20 % after it', async () => {
      const { first } = await deliveredOnce('/down', { status: 500, body: 'down' });
      assert.equal(first.attempts[0].retryAfter, null);
      assertDelay(first, 0.8 * INTERVAL, 1.2 * INTERVAL);
      assert.equal(first.nextAttemptAt, await scheduled(first.id));
    });

    it("an HTTP-date on a 429 is recorded as received and is the next attempt's time to the millisecond", async () => {
      const until = new Date(Math.ceil((Date.now() + 90_000) / 1000) * 1000).toUTCString();
      const { first } = await deliveredOnce('/slow-down', { status: 429, headers: { 'retry-after': until } });
      assert.equal(first.attempts[0].retryAfter, until);
      assert.equal(first.nextAttemptAt, new Date(until).toISOString());
      assert.equal(first.nextAttemptAt, await scheduled(first.id));
    });

    it('recorded as received whatever it says; the schedule honours it on 429 and 503 only, and as a lower bound', async () => {
      const ignored = await deliveredOnce('/error-with-wait', { status: 500, headers: { 'retry-after': '120' } });
      assert.equal(ignored.first.attempts[0].retryAfter, '120');
      assertDelay(ignored.first, 0.8 * INTERVAL, 1.2 * INTERVAL);
      const shorter = await deliveredOnce('/short-wait', { status: 503, headers: { 'retry-after': '5' } });
      assert.equal(shorter.first.attempts[0].retryAfter, '5');
      assertDelay(shorter.first, 0.8 * INTERVAL, 1.2 * INTERVAL);
      const unreadable = await deliveredOnce('/odd-wait', { status: 503, headers: { 'retry-after': 'soon, maybe' } });
      assert.equal(unreadable.first.attempts[0].retryAfter, 'soon, maybe');
      assertDelay(unreadable.first, 0.8 * INTERVAL, 1.2 * INTERVAL);
    });

    it('a failed notification has no next attempt, whatever its last answer asked for', async () => {
      // A test send gets one attempt: a 503 ends it failed.
      replies.set('/test-busy', { status: 503, headers: { 'retry-after': '120' } });
      const { token, subscribe } = await notificationTenant(t);
      const sub = await subscribe({ url: `${receiver.url}/test-busy` });
      const sent = await api(t.url, 'POST', `/v2/subscriptions/${sub._id}/test`, { token });
      assert.equal(sent.status, 202, JSON.stringify(sent.body));
      const failed = await eventually(
        async () => ((d) => d.status === 'failed' && d)((await api(t.url, 'GET', `/v2/notifications/${sent.body.notificationId}`, { token })).body),
        15_000,
        'the test send',
      );
      assert.equal(failed.attempts[0].retryAfter, '120');
      assert.equal(failed.nextAttemptAt, null);
      assert.equal(await scheduled(failed.id), null);
    });
  });
}
