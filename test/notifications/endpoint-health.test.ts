// needs: database
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { bucketOf, STATS_BUCKET_MS, STATS_WINDOWS, type CountedAttempt } from '../../src/domain/notifications/endpoint-health.js';
import { recordEndpointHealth } from '../../src/services/endpoint-health.js';
import { insertNotifications, newNotificationRow } from '../../src/storage/repositories/notifications.js';
import { startWorker } from '../../src/worker/start-worker.js';
import type { JobWorker } from '../../src/worker/job-worker.js';
import { testDialects } from '../support/databases.js';
import { tenantWithExperience } from '../support/experiences.js';
import { eventually } from '../support/notifications.js';
import { startHttpReceiver, startHttpsReceiver, type Receiver } from '../support/receivers.js';
import { testPki, writePkiFiles, type TestPki } from '../support/test-pki.js';
import { api, startTestApp, type TestApp } from '../support/test-app.js';

/**
 * GET /subscriptions/{id}/stats from the rollup the attempt log writer keeps, and auto-disable
 * (SUBSCRIPTION_DISABLE_AFTER, short here) against real receivers.
 */
for (const dialect of testDialects()) {
  describe(`endpoint health [${dialect}]`, () => {
    let t: TestApp;
    let worker: JobWorker;
    let token: string;
    let readOnly: string;
    let pki: TestPki;

    before(async () => {
      pki = await testPki();
      const files = writePkiFiles(pki);
      t = await startTestApp(dialect, {
        RETRY_INTERVAL: '40ms',
        // Long enough (30 attempts, ~1.2 s) that a failing subscription always has notifications pending when it is switched off.
        RETRY_MAX_ATTEMPTS: '30',
        // SUBSCRIPTION_DISABLE_AFTER, short: only the auto-disable test below lets attempts fail that long. The
        // others' retries succeed within it however slowly a loaded machine runs them (seconds, not milliseconds).
        SUBSCRIPTION_DISABLE_AFTER: '8s',
        MTLS_CERT_FILE: files.certFile,
        MTLS_KEY_FILE: files.keyFile,
        MTLS_CA_FILE: files.caFile,
      });
      worker = startWorker(t.deps, { pollIntervalMs: 25 });
    });
    /** A fresh account with the `summer` experience: per-experience subscriptions of one test never see another's requests. */
    const tenant = async () => {
      const tenant = await tenantWithExperience(t, { prizes: [{ id: 'cpn', bucket: 'c', value: 1, kind: 'coupon' }] });
      token = tenant.token;
      readOnly = await t.token(tenant.client, 'subscriptions:read');
    };
    after(async () => {
      await worker.stop();
      await t.close();
    });

    const subscribe = async (url: string, authorization: Record<string, unknown> | null = null) => {
      const created = await api(t.url, 'POST', '/v2/subscriptions', { token, body: { event: 'registered-requests', experiences: ['summer'], callback: { url, authorization } } });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      return created.body as { _id: string };
    };
    const send = async () => {
      const response = await api(t.url, 'POST', '/v2/requests', { token, body: { experience: 'summer', event: 'purchase' } });
      assert.equal(response.status, 202, JSON.stringify(response.body));
      return response.body.id as string;
    };
    const stats = async (id: string, window?: string, as = readOnly) => {
      const response = await api(t.url, 'GET', `/v2/subscriptions/${id}/stats${window ? `?window=${window}` : ''}`, { token: as });
      assert.equal(response.status, 200, JSON.stringify(response.body));
      return response.body;
    };
    const settled = (subscriptionId: string, count: number) =>
      eventually(
        async () => {
          const log = await api(t.url, 'GET', `/v2/notifications?subscriptionId=${subscriptionId}&limit=100`, { token });
          return log.body.data.length === count && log.body.data.every((n: any) => n.status !== 'pending') && log.body.data;
        },
        20_000,
        `${count} notifications settled`,
      );

    it('counts attempts by outcome, latency, the last success and failure, and leaves test sends out', async () => {
      await tenant();
      // Every notification's first call fails (503), the second succeeds.
      const seen = new Set<string>();
      const receiver = await startHttpReceiver((request) => {
        const id = String(request.headers['webhook-id']);
        if (seen.has(id)) return { status: 200 };
        seen.add(id);
        return { status: 503, body: 'warming up' };
      });
      try {
        const sub = await subscribe(`${receiver.url}/hook`);
        const empty = await stats(sub._id);
        assert.deepEqual(
          { ...empty, since: undefined, series: undefined },
          {
            window: '24h',
            since: undefined,
            series: undefined,
            attempts: { succeeded: 0, retry: 0, failed: 0 },
            successRate: null,
            latencyMs: { p50: null, p95: null },
            lastSuccess: null,
            lastFailure: null,
            consecutiveFailures: 0,
            pending: 0,
            failed: 0,
            circuit: { state: 'closed', failures: 0, lastFailure: null, openedAt: null, nextProbeAt: null, probes: 0, held: 0 },
          },
        );
        assert.equal(empty.series.length, 24);
        assert.ok(empty.series.every((b: any) => b.attempts.succeeded + b.attempts.retry + b.attempts.failed === 0 && b.successRate === null && b.latencyMs.p50 === null));
        for (let i = 0; i < 4; i++) await send();
        await settled(sub._id, 4);
        const day = await stats(sub._id, '24h');
        assert.deepEqual(day.attempts, { succeeded: 4, retry: 4, failed: 0 });
        assert.equal(day.successRate, 0.5);
        assert.equal(typeof day.latencyMs.p50, 'number');
        assert.ok(day.latencyMs.p95 >= day.latencyMs.p50);
        assert.equal(day.lastSuccess.statusCode, 200);
        assert.equal(day.lastFailure.statusCode, 503);
        assert.match(day.lastFailure.error, /503/);
        assert.ok(Date.parse(day.lastSuccess.at) >= Date.parse(day.lastFailure.at) - 5, 'the last attempt was a success');
        assert.equal(day.consecutiveFailures, 0);
        assert.equal(day.pending, 0);
        // The window ends with the five-minute bucket in progress and is 24 h long.
        assert.ok(Date.parse(day.since) > Date.now() - 86_400_000 - 5_000 && Date.parse(day.since) <= Date.now() - 86_400_000 + STATS_BUCKET_MS, day.since);
        assert.deepEqual((await stats(sub._id, '1h')).attempts, day.attempts);
        assert.deepEqual((await stats(sub._id, '7d')).attempts, day.attempts);

        // A test send that fails is in the log but not in the endpoint's health.
        const down = await startHttpReceiver(() => ({ status: 500 }));
        try {
          await api(t.url, 'PUT', `/v2/subscriptions/${sub._id}`, { token, body: { callback: { url: `${down.url}/x` } } });
          const test = await api(t.url, 'POST', `/v2/subscriptions/${sub._id}/test`, { token });
          assert.equal(test.status, 202);
          await eventually(async () => (await api(t.url, 'GET', `/v2/notifications/${test.body.notificationId}`, { token })).body.status === 'failed', 10_000, 'test send failed');
          assert.equal(down.requests.length, 1);
          const after = await stats(sub._id);
          assert.deepEqual(after.attempts, day.attempts);
          assert.equal(after.consecutiveFailures, 0);
          assert.deepEqual(after.lastFailure, day.lastFailure);
        } finally {
          await down.close();
        }
      } finally {
        await receiver.close();
      }
    });

    it('counts deliveries over mTLS like any other', async () => {
      await tenant();
      const tls = await startHttpsReceiver({ key: pki.server.key, cert: pki.server.cert, ca: pki.ca.cert, requireClientCertificate: true });
      try {
        const sub = await subscribe(`${tls.url}/mtls`, { mtls: {} });
        await send();
        await send();
        await settled(sub._id, 2);
        const now = await stats(sub._id, '1h');
        assert.deepEqual(now.attempts, { succeeded: 2, retry: 0, failed: 0 });
        assert.equal(now.successRate, 1);
        assert.equal(now.lastFailure, null);
        assert.equal(tls.requests.at(-1)!.clientCertificateCN, pki.clientCommonName);
      } finally {
        await tls.close();
      }
    });

    it('answers 400 naming the member for an unknown window, 404 for an unknown or foreign subscription', async () => {
      await tenant();
      const sub = await subscribe('http://127.0.0.1:9/x');
      for (const window of ['2h', '30d', '', '1H']) {
        const response = await api(t.url, 'GET', `/v2/subscriptions/${sub._id}/stats?window=${window}`, { token });
        assert.equal(response.status, 400, window);
        assert.equal(response.body.errors[0].path, 'querystring.window');
      }
      assert.equal((await api(t.url, 'GET', '/v2/subscriptions/sub_nope/stats', { token })).status, 404);
      const other = await t.createClientAccount();
      assert.equal((await api(t.url, 'GET', `/v2/subscriptions/${sub._id}/stats`, { token: await t.token(other) })).status, 404);
      const operator = await t.token(t.operator);
      const client = await t.deps.db.selectFrom('subscriptions').select('account_id').where('id', '=', sub._id).executeTakeFirstOrThrow();
      assert.equal((await api(t.url, 'GET', `/v2/subscriptions/${sub._id}/stats?accountId=${client.account_id}&window=7d`, { token: operator })).status, 200);
      assert.equal((await api(t.url, 'GET', `/v1/subscriptions/${sub._id}/stats`, { token })).status, 200, 'under /v1 too');
    });

    it('keeps the run of failures exactly across batches, and a success ends it (the rollup as written in one transaction)', async () => {
      await tenant();
      const sub = await subscribe('http://127.0.0.1:9/run');
      const hourAgo = Date.now() - 3_600_000; // one base, so the offsets are exact however long the writes take
      const at = (offset: number, outcome: CountedAttempt['outcome']): CountedAttempt => ({
        subscriptionId: sub._id,
        at: hourAgo + offset,
        outcome,
        latencyMs: 12,
        statusCode: outcome === 'succeeded' ? 204 : 500,
        error: outcome === 'succeeded' ? null : `failure at ${offset}`,
      });
      const write = (attempts: CountedAttempt[]) => t.deps.db.transaction().execute((tx) => recordEndpointHealth(tx, attempts, { now: Date.now(), disableAfterMs: 0 }));
      await write([at(1, 'retry'), at(2, 'succeeded'), at(3, 'retry')]);
      await write([at(4, 'failed'), at(5, 'retry')]);
      let now = await stats(sub._id);
      assert.equal(now.consecutiveFailures, 3);
      assert.deepEqual(now.attempts, { succeeded: 1, retry: 3, failed: 1 });
      assert.equal(now.lastFailure.error, 'failure at 5');
      assert.equal(now.lastSuccess.statusCode, 204);
      const health = await t.deps.db.selectFrom('subscription_health').select('failing_since').where('subscription_id', '=', sub._id).executeTakeFirstOrThrow();
      assert.equal(Number(health.failing_since), Date.parse(now.lastSuccess.at) + 1, 'the run began with the first failure after the success');
      await write([at(6, 'succeeded')]);
      now = await stats(sub._id);
      assert.equal(now.consecutiveFailures, 0);
      assert.equal(now.lastFailure.error, 'failure at 5');
      assert.equal(now.successRate, Math.round((2 / 6) * 10_000) / 10_000);
    });

    it('switches off a subscription whose every attempt failed for SUBSCRIPTION_DISABLE_AFTER; PUT active: true turns it back on', async () => {
      await tenant();
      const receiver = await startHttpReceiver(() => ({ status: 500, body: 'gone' }));
      try {
        const sub = await subscribe(`${receiver.url}/dead`);
        // A new request every 100 ms keeps attempts failing past 8 s, with notifications pending all along.
        let disabled: any;
        for (let i = 0; i < 150 && !disabled; i++) {
          await send();
          await new Promise((resolve) => setTimeout(resolve, 100));
          const current = (await api(t.url, 'GET', `/v2/subscriptions/${sub._id}`, { token })).body;
          if (current.active === false) disabled = current;
        }
        assert.ok(disabled, 'the subscription was switched off');
        assert.match(disabled.disabledReason, /every delivery attempt failed/);
        assert.ok(Date.parse(disabled.disabledAt) > 0);
        // Every notification ends failed: those pending when it was switched off at once, with the reason; an attempt
        // in flight then is recorded first (its retry is refused: the subscription is inactive).
        const log = await eventually(
          async () => {
            const data = (await api(t.url, 'GET', `/v2/notifications?subscriptionId=${sub._id}&limit=100`, { token })).body.data;
            return data.every((n: any) => n.status === 'failed') && data;
          },
          20_000,
          'every notification of the switched-off subscription failed',
        );
        assert.ok(
          log.some((n: any) => /switched off/.test(n.lastError ?? '')),
          'its pending notifications ended failed with the reason',
        );

        // Inactive now: new requests for its experience are not sent to it (the seed's per-experience rule).
        const calls = receiver.requests.length;
        await send();
        await new Promise((resolve) => setTimeout(resolve, 300));
        assert.equal(receiver.requests.length, calls, 'nothing more is sent to a switched-off subscription');

        const enabled = await api(t.url, 'PUT', `/v2/subscriptions/${sub._id}`, { token, body: { active: true } });
        assert.equal(enabled.status, 200);
        assert.equal(enabled.body.active, true);
        assert.equal('disabledReason' in enabled.body, false);
        assert.equal('disabledAt' in enabled.body, false);
        assert.equal((await stats(sub._id)).consecutiveFailures, 0, 'the run of failures starts over');
        // One more failing notification does not switch it off at once.
        await send();
        await eventually(async () => receiver.requests.length > calls && true, 10_000, 'sent again');
        await new Promise((resolve) => setTimeout(resolve, 200));
        assert.equal((await api(t.url, 'GET', `/v2/subscriptions/${sub._id}`, { token })).body.active, true);
      } finally {
        await receiver.close();
      }
    });
  });

  describe(`auto-disable off [${dialect}]`, () => {
    let t: TestApp;
    let worker: JobWorker;
    let receiver: Receiver;
    before(async () => {
      t = await startTestApp(dialect, { RETRY_INTERVAL: '20ms', RETRY_MAX_ATTEMPTS: '10', SUBSCRIPTION_DISABLE_AFTER: '0' });
      worker = startWorker(t.deps, { pollIntervalMs: 25 });
      receiver = await startHttpReceiver(() => ({ status: 500 }));
    });
    after(async () => {
      await worker.stop();
      await receiver.close();
      await t.close();
    });

    it('SUBSCRIPTION_DISABLE_AFTER=0 never switches a subscription off', async () => {
      const client = await t.createClientAccount();
      const token = await t.token(client);
      const sub = (await api(t.url, 'POST', '/v2/subscriptions', { token, body: { event: 'registered-requests', callback: { url: `${receiver.url}/x` } } })).body;
      const test = await api(t.url, 'POST', `/v2/subscriptions/${sub._id}/test`, { token });
      assert.equal(test.status, 202);
      // Written straight into the rollup: failing for a year.
      await t.deps.db.transaction().execute((tx) =>
        recordEndpointHealth(tx, [{ subscriptionId: sub._id, at: Date.now() - 365 * 86_400_000, outcome: 'retry', latencyMs: 1, statusCode: 500, error: 'x' }], {
          now: Date.now(),
          disableAfterMs: t.deps.config.subscriptionDisableAfterMs,
        }),
      );
      assert.equal((await api(t.url, 'GET', `/v2/subscriptions/${sub._id}`, { token })).body.active, true);
    });
  });

  describe(`the window as a series, and figures that agree with their lists [${dialect}]`, () => {
    // Held: the window's buckets are known in advance (the rollup is written straight into it).
    const NOW = Date.UTC(2026, 0, 15, 12, 7, 30);
    let t: TestApp;
    let token: string;
    let accountId: string;
    before(async () => {
      t = await startTestApp(dialect, {}, { clock: () => NOW });
      const client = await t.createClientAccount();
      accountId = client.accountId;
      token = await t.token(client);
    });
    after(() => t.close());

    const subscribe = async () => {
      const created = await api(t.url, 'POST', '/v2/subscriptions', { token, body: { event: 'registered-requests', callback: { url: 'http://127.0.0.1:9/hook' } } });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      return created.body._id as string;
    };
    const stats = async (id: string, window: string) => {
      const response = await api(t.url, 'GET', `/v2/subscriptions/${id}/stats?window=${window}`, { token });
      assert.equal(response.status, 200, JSON.stringify(response.body));
      return response.body;
    };

    it('splits each window in equal buckets, oldest first, every one present, that add up to the totals', async () => {
      const sub = await subscribe();
      const attempt = (at: number, outcome: CountedAttempt['outcome'], latencyMs = 12): CountedAttempt => ({
        subscriptionId: sub,
        at,
        outcome,
        latencyMs,
        statusCode: outcome === 'succeeded' ? 200 : 503,
        error: null,
      });
      const end = bucketOf(NOW) + STATS_BUCKET_MS; // 12:10, the end of the bucket in progress
      const minute = 60_000;
      const attempts = [
        attempt(end - 60 * minute - 1, 'retry'), // 11:09:59.999: before the hour
        attempt(end - 60 * minute, 'retry', 3000), // 11:10: the hour's first bucket
        attempt(end - 60 * minute + 1, 'succeeded', 3000),
        attempt(end - 36 * minute + 10_000, 'succeeded', 5), // 11:34:10
        attempt(end - 36 * minute + 20_000, 'failed', 5),
        attempt(NOW - 1, 'succeeded'), // the bucket in progress
        attempt(end - 1, 'succeeded'), // a worker whose clock runs ahead: still the bucket in progress
        attempt(end, 'succeeded'), // after the window
        attempt(end - 23 * 60 * minute - 1, 'retry'),
        attempt(end - 24 * 60 * minute, 'retry'), // the day's first bucket
        attempt(end - 24 * 60 * minute - 1, 'failed'), // before the day
        attempt(end - 6 * 24 * 60 * minute, 'succeeded'),
        attempt(end - 7 * 24 * 60 * minute, 'succeeded'), // the week's first bucket
        attempt(end - 7 * 24 * 60 * minute - 1, 'failed'), // before the week
      ];
      await t.deps.db.transaction().execute((tx) => recordEndpointHealth(tx, attempts, { now: NOW, disableAfterMs: 0 }));

      for (const [window, buckets, bucketMs] of [
        ['1h', 12, 5 * minute],
        ['24h', 24, 60 * minute],
        ['7d', 28, 6 * 60 * minute],
      ] as const) {
        const body = await stats(sub, window);
        const since = end - STATS_WINDOWS[window];
        assert.equal(body.since, new Date(since).toISOString(), window);
        assert.equal(body.series.length, buckets, window);
        const expected = Array.from({ length: buckets }, () => ({ succeeded: 0, retry: 0, failed: 0 }));
        for (const a of attempts) if (a.at >= since && a.at < end) expected[Math.floor((a.at - since) / bucketMs)]![a.outcome] += 1;
        body.series.forEach((bucket: any, i: number) => {
          assert.equal(bucket.start, new Date(since + i * bucketMs).toISOString(), `${window} bucket ${i}`);
          assert.deepEqual(bucket.attempts, expected[i], `${window} bucket ${i}`);
          const all = bucket.attempts.succeeded + bucket.attempts.retry + bucket.attempts.failed;
          assert.equal(bucket.successRate, all === 0 ? null : Math.round((bucket.attempts.succeeded / all) * 10_000) / 10_000);
          assert.equal(bucket.latencyMs.p50 === null, all === 0, `${window} bucket ${i}: a latency where there are attempts`);
        });
        const sum = (kind: 'succeeded' | 'retry' | 'failed') => body.series.reduce((n: number, b: any) => n + b.attempts[kind], 0);
        assert.deepEqual(body.attempts, { succeeded: sum('succeeded'), retry: sum('retry'), failed: sum('failed') }, `${window}: the series adds up to the totals`);
        assert.deepEqual(body.attempts, {
          succeeded: attempts.filter((a) => a.at >= since && a.at < end && a.outcome === 'succeeded').length,
          retry: attempts.filter((a) => a.at >= since && a.at < end && a.outcome === 'retry').length,
          failed: attempts.filter((a) => a.at >= since && a.at < end && a.outcome === 'failed').length,
        });
      }
      const hour = await stats(sub, '1h');
      assert.deepEqual(hour.attempts, { succeeded: 4, retry: 1, failed: 1 });
      // Each bucket's latency is its own attempts': 3 s in the first, 5 ms at 11:34.
      assert.ok(hour.series[0].latencyMs.p50 > 2000, JSON.stringify(hour.series[0]));
      assert.ok(hour.series[4].latencyMs.p50 <= 5, JSON.stringify(hour.series[4]));
      assert.ok(hour.latencyMs.p95 > 2000 && hour.latencyMs.p50 <= 20, JSON.stringify(hour.latencyMs));
    });

    it('counts pending and failed notifications, test sends included, exactly as the delivery log lists them', async () => {
      const sub = await subscribe();
      const otherSub = await subscribe();
      const row = (subscriptionId: string, status: 'pending' | 'succeeded' | 'failed', test = false) => ({
        ...newNotificationRow({ accountId, requestId: 'req_stats_1', subscriptionId, event: 'registered-requests', url: 'http://127.0.0.1:9/hook', payload: '{}', test }, NOW - 60_000),
        status,
        run_at: status === 'pending' ? NOW + 3_600_000 : null,
      });
      await insertNotifications(t.deps.db, [
        row(sub, 'pending'),
        row(sub, 'pending'),
        row(sub, 'pending', true),
        row(sub, 'failed'),
        row(sub, 'failed'),
        row(sub, 'failed'),
        row(sub, 'failed', true),
        row(sub, 'succeeded'),
        row(sub, 'succeeded', true),
        row(otherSub, 'pending'),
        row(otherSub, 'failed'),
      ]);
      const listed = async (status: string) => (await api(t.url, 'GET', `/v2/notifications?subscriptionId=${sub}&status=${status}&limit=200`, { token })).body.data.length;
      for (const window of ['1h', '24h', '7d']) {
        const body = await stats(sub, window);
        assert.equal(body.pending, 3);
        assert.equal(body.failed, 4);
        assert.equal(body.pending, await listed('pending'));
        assert.equal(body.failed, await listed('failed'));
        assert.deepEqual(body.attempts, { succeeded: 0, retry: 0, failed: 0 }, 'notifications are not attempts');
      }
    });
  });

  describe(`failed notifications recovered by a manual retry [${dialect}]`, () => {
    let t: TestApp;
    let worker: JobWorker;
    let receiver: Receiver;
    let up = false;
    before(async () => {
      t = await startTestApp(dialect, { RETRY_INTERVAL: '20ms', RETRY_MAX_ATTEMPTS: '2', SUBSCRIPTION_DISABLE_AFTER: '0' });
      worker = startWorker(t.deps, { pollIntervalMs: 25 });
      receiver = await startHttpReceiver(() => ({ status: up ? 200 : 503 }));
    });
    after(async () => {
      await worker.stop();
      await receiver.close();
      await t.close();
    });

    it('a delivery that failed all its attempts and then succeeded on a manual retry is no longer failed, in the figure as in the list', async () => {
      const { token } = await tenantWithExperience(t, { prizes: [{ id: 'cpn', bucket: 'c', value: 1, kind: 'coupon' }] });
      const created = await api(t.url, 'POST', '/v2/subscriptions', { token, body: { event: 'registered-requests', callback: { url: `${receiver.url}/hook` } } });
      const sub = created.body._id as string;
      const log = async (status: string) => (await api(t.url, 'GET', `/v2/notifications?subscriptionId=${sub}&status=${status}&limit=200`, { token })).body.data as Array<{ id: string }>;
      const stats = async () => (await api(t.url, 'GET', `/v2/subscriptions/${sub}/stats?window=1h`, { token })).body;
      const agree = async () => {
        const body = await stats();
        assert.equal(body.failed, (await log('failed')).length, 'failed: the figure and the list');
        assert.equal(body.pending, (await log('pending')).length, 'pending: the figure and the list');
        const sum = (kind: string) => body.series.reduce((n: number, b: any) => n + b.attempts[kind], 0);
        assert.deepEqual(body.attempts, { succeeded: sum('succeeded'), retry: sum('retry'), failed: sum('failed') });
        assert.equal(body.series.length, 12);
        return body;
      };

      for (let i = 0; i < 2; i++) assert.equal((await api(t.url, 'POST', '/v2/requests', { token, body: { experience: 'summer', event: 'purchase' } })).status, 202);
      const failed = await eventually(
        async () => {
          const [f, p] = [await log('failed'), await log('pending')];
          return f.length === 2 && p.length === 0 && f;
        },
        20_000,
        'both notifications failed',
      );
      let body = await agree();
      assert.equal(body.failed, 2);
      assert.deepEqual(body.attempts, { succeeded: 0, retry: 2, failed: 2 }, 'attempts, not notifications');

      up = true;
      for (const [i, notification] of failed.entries()) {
        assert.equal((await api(t.url, 'POST', `/v2/notifications/${notification.id}/retry`, { token })).status, 202);
        await eventually(async () => (await api(t.url, 'GET', `/v2/notifications/${notification.id}`, { token })).body.status === 'succeeded', 10_000, 'the retry delivered');
        body = await agree();
        assert.equal(body.failed, failed.length - i - 1);
      }
      assert.equal(body.failed, 0);
      assert.deepEqual(await log('failed'), []);
      assert.equal(body.attempts.succeeded, 2);

      // A test send that fails is a failed notification of the subscription, in the figure as in the list.
      up = false;
      const test = await api(t.url, 'POST', `/v2/subscriptions/${sub}/test`, { token });
      assert.equal(test.status, 202);
      await eventually(async () => (await api(t.url, 'GET', `/v2/notifications/${test.body.notificationId}`, { token })).body.status === 'failed', 10_000, 'the test send failed');
      body = await agree();
      assert.equal(body.failed, 1);
      assert.deepEqual(
        (await log('failed')).map((n) => n.id),
        [test.body.notificationId],
      );
    });
  });
}
