// needs: database
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { startWorker } from '../../src/worker/start-worker.js';
import type { JobWorker } from '../../src/worker/job-worker.js';
import { testDialects } from '../support/databases.js';
import { tenantWithExperience } from '../support/experiences.js';
import { eventually, verifyWebhook } from '../support/notifications.js';
import { startHttpReceiver, type Receiver, type RecordedRequest } from '../support/receivers.js';
import { api, startTestApp, type TestApp } from '../support/test-app.js';

/**
 * The endpoint circuit breaker (docs/delivery.md, "Circuit breaker"), against a real receiver that
 * goes down and comes back: CIRCUIT_BREAKER_FAILURES attempts in a row without an answer or with a
 * 5xx open the endpoint's circuit; new notifications are then held (no attempt), one probe at a time
 * tests the endpoint with a growing wait; the first answer closes it and what was held goes out, in
 * each request's order, once each. Attempts made before it opened keep the contract's schedule.
 */
const PROBE_MS = 150;
const SETTINGS = {
  CIRCUIT_BREAKER_FAILURES: '3',
  CIRCUIT_BREAKER_PROBE_INTERVAL: `${PROBE_MS}ms`,
  CIRCUIT_BREAKER_PROBE_MAX_INTERVAL: `${PROBE_MS * 4}ms`,
  RETRY_INTERVAL: '1h',
  SUBSCRIPTION_DISABLE_AFTER: '0',
};

for (const dialect of testDialects()) {
  describe(`endpoint circuit breaker [${dialect}]`, () => {
    let t: TestApp;
    let worker: JobWorker;
    const receivers: Receiver[] = [];

    before(async () => {
      t = await startTestApp(dialect, SETTINGS);
      worker = startWorker(t.deps, { pollIntervalMs: 25 });
    });
    after(async () => {
      await worker.stop();
      await Promise.all(receivers.map((r) => r.close()));
      await t.close();
    });

    /** A receiver that answers 503 while `down`, 204 otherwise, and records when each call started and how many ran at once. */
    const endpoint = async () => {
      const state = { down: true, inFlight: 0, maxInFlight: 0, starts: [] as number[] };
      const receiver = await startHttpReceiver(async () => {
        state.starts.push(Date.now());
        state.inFlight += 1;
        state.maxInFlight = Math.max(state.maxInFlight, state.inFlight);
        await new Promise((resolve) => setTimeout(resolve, 20));
        state.inFlight -= 1;
        return { status: state.down ? 503 : 204 };
      });
      receivers.push(receiver);
      return { receiver, state };
    };

    const tenant = async () => {
      const { client, token } = await tenantWithExperience(t, { prizes: [{ id: 'cpn', value: 1, stock: null }] });
      const subscribe = async (event: string, url: string) => {
        const created = await api(t.url, 'POST', '/v2/subscriptions', { token, body: { event, callback: { url } } });
        assert.equal(created.status, 201, JSON.stringify(created.body));
        return created.body as { _id: string; secret: string };
      };
      const send = async () => {
        const response = await api(t.url, 'POST', '/v2/requests', { token, body: { experience: 'summer' } });
        assert.equal(response.status, 202, JSON.stringify(response.body));
        return response.body.id as string;
      };
      const stats = async (subscriptionId: string) => (await api(t.url, 'GET', `/v2/subscriptions/${subscriptionId}/stats`, { token })).body;
      const rows = async () =>
        (
          await sql<{ id: string; request_id: string; event: string; url: string; status: string; attempt_count: number; run_at: number | null; held_at: number | null; waits_for: string | null }>`
            select id, request_id, event, url, status, attempt_count, run_at, held_at, waits_for from notifications where account_id = ${client.accountId}`.execute(t.deps.db)
        ).rows.map((row) => ({
          ...row,
          attempt_count: Number(row.attempt_count),
          run_at: row.run_at === null ? null : Number(row.run_at),
          held_at: row.held_at === null ? null : Number(row.held_at),
        }));
      const attempts = async () =>
        (
          await sql<{ notification_id: string; n: number | string }>`select a.notification_id, count(*) as n from notification_attempts a join notifications n on n.id = a.notification_id
            where n.account_id = ${client.accountId} group by a.notification_id`.execute(t.deps.db)
        ).rows;
      return { accountId: client.accountId, token, subscribe, send, stats, rows, attempts };
    };

    const calls = (receiver: Receiver, id: string) => receiver.requests.filter((request) => request.headers['webhook-id'] === id).length;

    it('opens after a run of failures, holds what comes meanwhile, probes one at a time with a growing wait, and sends what it held once the endpoint answers', async () => {
      const a = await tenant();
      const down = await endpoint();
      const hooks = `${down.receiver.url}/hooks`;
      const registered = await a.subscribe('registered-request', hooks);
      await a.subscribe('processed-request', hooks);
      const ops = await startHttpReceiver();
      receivers.push(ops);
      const circuitSubscription = await a.subscribe('endpoint-circuit', `${ops.url}/ops`);

      // Three requests: their registered-requests fail (503), the processed ones wait behind them.
      for (let i = 0; i < 3; i++) await a.send();
      const opened = await eventually(
        async () => {
          const stats = await a.stats(registered._id);
          return stats.circuit.state === 'open' && stats;
        },
        15_000,
        'the circuit opens',
      );
      assert.equal(opened.circuit.failures >= 3, true);
      assert.equal(opened.circuit.lastFailure, 'HTTP 503');
      assert.ok(Date.parse(opened.circuit.nextProbeAt) > Date.parse(opened.circuit.openedAt));
      const failedBefore = (await a.rows()).filter((row) => row.url === hooks && row.attempt_count > 0).map((row) => row.id);
      assert.ok(failedBefore.length >= 3);

      // The account is told, signed, by its endpoint-circuit subscription.
      const openNotice = await eventually(() => ops.requests.find((request) => (JSON.parse(request.body) as { state: string }).state === 'open'), 10_000, 'the open notice');
      const notice = verifyWebhook(circuitSubscription.secret, openNotice);
      assert.equal(openNotice.headers['x-webhook-event'], 'endpoint-circuits');
      assert.equal(notice.url, hooks);
      assert.equal(notice.lastFailure, 'HTTP 503');

      // New requests meanwhile: held, no attempt, shown in the log with the reason.
      const later: string[] = [];
      for (let i = 0; i < 8; i++) later.push(await a.send());
      const heldRows = await eventually(
        async () => {
          const rows = (await a.rows()).filter((row) => later.includes(row.request_id) && row.event === 'registered-requests');
          return rows.length === 8 && rows.every((row) => row.held_at !== null || row.attempt_count > 0) && rows;
        },
        15_000,
        'the new notifications held',
      );
      // At most the probes were attempted among them.
      const probed = heldRows.filter((row) => row.attempt_count > 0);
      assert.ok(probed.length <= 3, `probes so far: ${probed.length}`);
      const held = heldRows.find((row) => row.held_at !== null)!;
      const item = (await api(t.url, 'GET', `/v2/notifications/${held.id}`, { token: a.token })).body;
      assert.equal(item.status, 'pending');
      assert.equal(item.attemptCount, 0);
      assert.equal(item.nextAttemptAt, null);
      assert.match(item.held.reason, /circuit breaker is open/);
      assert.ok(Date.parse(item.held.since) > 0);

      // Probes: one at a time, never sooner than the wait after the last (PROBE_MS, doubling).
      const probesFrom = down.state.starts.length;
      await new Promise((resolve) => setTimeout(resolve, PROBE_MS * 8));
      const probeStarts = down.state.starts.slice(probesFrom);
      assert.ok(probeStarts.length >= 1 && probeStarts.length <= 6, `probe calls in ${PROBE_MS * 8} ms: ${probeStarts.length}`);
      for (let i = 1; i < probeStarts.length; i++) assert.ok(probeStarts[i]! - probeStarts[i - 1]! >= PROBE_MS - 10, `probes ${probeStarts[i]! - probeStarts[i - 1]!} ms apart`);
      const during = await a.stats(registered._id);
      assert.equal(during.circuit.state, 'open');
      assert.ok(during.circuit.held >= 8 - 6);
      const metrics = await (await fetch(`${t.url}/metrics`)).text();
      assert.match(metrics, /rewards_endpoint_circuits\{state="open"\} [1-9]/);
      assert.match(metrics, /rewards_notifications_held [1-9]/);

      // Back up: the next probe closes the circuit; what it held goes out, each once, each request in order.
      const callsBefore = down.receiver.requests.length;
      down.state.down = false;
      let last: unknown;
      await eventually(
        async () => {
          const rows = (await a.rows()).filter((row) => row.url === hooks);
          const scheduled = new Set(rows.filter(onSchedule).map((row) => row.id));
          last = rows.filter((row) => row.status !== 'succeeded' && !scheduled.has(row.id) && !(row.waits_for !== null && scheduled.has(row.waits_for)));
          return (last as unknown[]).length === 0;
        },
        20_000,
        'what was held delivered',
      ).catch((error: Error) => {
        throw new Error(`${error.message}: ${JSON.stringify(last)}`);
      });
      /** Attempted before the opening, or a failed probe: pending on the contract's schedule, an hour away (what waits behind it waits on). */
      function onSchedule(row: { status: string; attempt_count: number; run_at: number | null }) {
        return row.status === 'pending' && row.attempt_count === 1 && row.run_at !== null && row.run_at > Date.now() + 30 * 60_000;
      }
      const rows = (await a.rows()).filter((row) => row.url === hooks);
      const attempts = new Map((await a.attempts()).map((row) => [row.notification_id, Number(row.n)]));
      for (const row of rows) assert.equal(calls(down.receiver, row.id), attempts.get(row.id) ?? 0, `${row.id}: one call per attempt logged`);
      for (const id of failedBefore) assert.equal(calls(down.receiver, id), 1, 'failed before the opening: not sent again on recovery');
      const delivered = rows.filter((row) => row.status === 'succeeded');
      assert.ok(delivered.length >= 8, `delivered: ${delivered.length}`);
      // Order: each request's registered-requests reached the receiver before its processed-requests.
      const after = down.receiver.requests.slice(callsBefore);
      const position = (request: RecordedRequest) => after.indexOf(request);
      for (const requestId of later) {
        const mine = after.filter((request) => JSON.parse(request.body).id === requestId);
        const first = mine.find((request) => request.headers['x-webhook-event'] === 'registered-requests');
        const second = mine.find((request) => request.headers['x-webhook-event'] === 'processed-requests');
        if (first && second) assert.ok(position(first) < position(second), `${requestId}: registered before processed`);
      }
      const closeNotice = await eventually(() => ops.requests.find((request) => (JSON.parse(request.body) as { state: string }).state === 'closed'), 10_000, 'the close notice');
      const closed = JSON.parse(closeNotice.body) as { held: number; failures: number };
      assert.ok(closed.held >= 1);
      assert.equal(closed.failures, 0);
      await eventually(async () => (await a.stats(registered._id)).circuit.state === 'closed', 10_000, 'the circuit closed and drained');
      assert.equal((await a.stats(registered._id)).circuit.held, 0);
      assert.equal(down.state.maxInFlight >= 1, true);
    });

    it('a test send and a manual retry go out while it is open; an answer to either closes it', async () => {
      const a = await tenant();
      const down = await endpoint();
      const hooks = `${down.receiver.url}/hooks`;
      const registered = await a.subscribe('registered-request', hooks);
      for (let i = 0; i < 3; i++) await a.send();
      await eventually(async () => (await a.stats(registered._id)).circuit.state === 'open', 15_000, 'the circuit opens');

      const before = down.receiver.requests.length;
      const test = await api(t.url, 'POST', `/v2/subscriptions/${registered._id}/test`, { token: a.token });
      assert.equal(test.status, 202);
      await eventually(() => down.receiver.requests.slice(before).some((request) => request.headers['x-webhook-test'] === 'true'), 10_000, 'the test send made while open');
      assert.equal((await a.stats(registered._id)).circuit.state, 'open', 'a 503 to the test send keeps it open');

      // A notification that failed before the opening: a manual retry sends it now, and its answer closes the circuit.
      down.state.down = false;
      const failed = (await a.rows()).find((row) => row.attempt_count === 1 && row.event === 'registered-requests')!;
      const retry = await api(t.url, 'POST', `/v2/notifications/${failed.id}/retry`, { token: a.token });
      assert.equal(retry.status, 202, JSON.stringify(retry.body));
      await eventually(async () => (await a.rows()).find((row) => row.id === failed.id)!.status === 'succeeded', 10_000, 'the manual retry delivered');
      await eventually(async () => (await a.stats(registered._id)).circuit.state === 'closed', 10_000, 'closed by the manual retry');
    });
  });

  describe(`endpoint circuit breaker and auto-disable [${dialect}]`, () => {
    let t: TestApp;
    let worker: JobWorker;
    let receiver: Receiver;
    before(async () => {
      t = await startTestApp(dialect, { ...SETTINGS, SUBSCRIPTION_DISABLE_AFTER: '3s' });
      worker = startWorker(t.deps, { pollIntervalMs: 25 });
      receiver = await startHttpReceiver(() => ({ status: 503 }));
    });
    after(async () => {
      await worker.stop();
      await receiver.close();
      await t.close();
    });

    it('auto-disable keeps its own clock: the failed probes switch the subscription off, and what was held ends failed with it', async () => {
      const { client, token } = await tenantWithExperience(t, { prizes: [{ id: 'cpn', value: 1, stock: null }] });
      const created = await api(t.url, 'POST', '/v2/subscriptions', { token, body: { event: 'registered-request', callback: { url: `${receiver.url}/hooks` } } });
      const stats = async () => (await api(t.url, 'GET', `/v2/subscriptions/${created.body._id}/stats`, { token })).body;
      // A request every 100 ms until the subscription is off: the first ones open the circuit, the next are held.
      let off = false;
      let mostHeld = 0;
      const stream = (async () => {
        while (!off) {
          await api(t.url, 'POST', '/v2/requests', { token, body: { experience: 'summer' } });
          mostHeld = Math.max(mostHeld, (await stats()).circuit.held);
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      })();
      const subscription = await eventually(
        async () => {
          const body = (await api(t.url, 'GET', `/v2/subscriptions/${created.body._id}`, { token })).body;
          return body.active === false && body;
        },
        20_000,
        'switched off by its failing probes',
      ).finally(() => (off = true));
      await stream;
      assert.match(subscription.disabledReason, /SUBSCRIPTION_DISABLE_AFTER/);
      assert.ok(mostHeld >= 1, 'notifications were held while the circuit was open');
      // One in a worker's hands at the switch-off is left to it (delivery-ownership.ts, rule 5): held, it is the next probe, refused.
      const ofAccount = async () => (await sql<{ status: string; held_at: number | null }>`select status, held_at from notifications where account_id = ${client.accountId}`.execute(t.deps.db)).rows;
      await eventually(async () => (await ofAccount()).every((row) => row.status === 'failed' && row.held_at === null), 10_000, 'every notification failed with the switch-off').catch(
        async (error: Error) => {
          throw new Error(`${error.message}: ${JSON.stringify(await ofAccount())}`);
        },
      );
    });
  });
}
