// needs: database
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startWorker } from '../../src/worker/start-worker.js';
import type { JobWorker } from '../../src/worker/job-worker.js';
import { DEFAULT_CONCURRENCY_LIMITS } from '../../src/worker/outbound/concurrency-limiter.js';
import { testDialects } from '../support/databases.js';
import { tenantWithExperience } from '../support/experiences.js';
import { eventually } from '../support/notifications.js';
import { gate, startHttpReceiver, type Receiver } from '../support/receivers.js';
import { sendRequests } from '../support/requests.js';
import { api, startTestApp, type TestApp } from '../support/test-app.js';

/**
 * One account floods the worker with deliveries to receivers that never answer; another account's
 * delivery still arrives at once (docs/delivery.md, "Fair delivery"). The flood's receivers hang
 * for CALLBACK_TIMEOUT (30 s): a delivery queued behind them would take at least that long, so
 * the bounds below separate the two outcomes by far more than any machine's noise.
 */
const HANGING_RECEIVERS = 9;
const FLOOD_REQUESTS = 40; // × 9 subscriptions: 360 deliveries, more than the worker's 256 slots

for (const dialect of testDialects()) {
  describe(`noisy neighbour [${dialect}]`, () => {
    let t: TestApp;
    let worker: JobWorker;
    const hang = gate();
    const hanging: Receiver[] = [];
    let quiet: Receiver;

    before(async () => {
      t = await startTestApp(dialect, { CALLBACK_TIMEOUT: '30s' });
      worker = startWorker(t.deps, { pollIntervalMs: 100 });
      // Each on an address of its own (127.0.0.2 …): the per-address cap does not hold them back, only the fair share does.
      for (let i = 0; i < HANGING_RECEIVERS; i++) hanging.push(await startHttpReceiver(async () => (await hang.wait, { status: 204 }), `127.0.0.${i + 2}`));
      quiet = await startHttpReceiver();
    });
    after(async () => {
      hang.open();
      await worker.stop();
      await Promise.all([...hanging, quiet].map((receiver) => receiver.close()));
      await t.close();
    });

    const inFlightAtFlood = () => hanging.reduce((sum, receiver) => sum + receiver.requests.length, 0);

    it("a flood of calls that hang takes every shared slot, and another account's delivery still arrives at once", async (context) => {
      const flood = await tenantWithExperience(t, { prizes: [] });
      for (const receiver of hanging) {
        const created = await api(t.url, 'POST', '/v2/subscriptions', { token: flood.token, body: { event: 'registered-request', callback: { url: `${receiver.url}/hook` } } });
        assert.equal(created.status, 201);
      }
      await sendRequests(t.url, flood.token, FLOOD_REQUESTS);
      // Alone, the flooding account uses every shared call slot: the fair share costs it nothing.
      await eventually(() => inFlightAtFlood() === DEFAULT_CONCURRENCY_LIMITS.overall, 20_000, 'the flood to fill every shared slot');

      const other = await tenantWithExperience(t, { prizes: [] });
      const created = await api(t.url, 'POST', '/v2/subscriptions', { token: other.token, body: { event: 'registered-request', callback: { url: `${quiet.url}/hook` } } });
      assert.equal(created.status, 201);
      const started = Date.now();
      const [requestId] = await sendRequests(t.url, other.token, 1);
      await eventually(() => quiet.requests.some((call) => call.body.includes(requestId!)), 10_000, "the other account's delivery during the flood").catch(async (error: Error) => {
        // What the worker had made of it: the request, and where its notification (its own delivery job) stood.
        const notifications = await t.deps.db
          .selectFrom('notifications')
          .select(['id', 'status', 'attempt_count', 'created_at', 'run_at', 'lease', 'lease_until', 'runs'])
          .where('account_id', '=', other.client.accountId)
          .execute();
        const request = await t.deps.db.selectFrom('requests').selectAll().where('id', '=', requestId!).executeTakeFirst();
        throw new Error(`${error.message}; at ${Date.now()}: request ${JSON.stringify(request?.status)}, its notifications ${JSON.stringify(notifications)}, ${inFlightAtFlood()} calls hanging`);
      });
      context.diagnostic(`the other account's delivery arrived ${Date.now() - started} ms after its request, with ${inFlightAtFlood()} calls hanging`);
      // Its test send too.
      const sent = await api(t.url, 'POST', `/v2/subscriptions/${created.body._id}/test`, { token: other.token });
      assert.equal(sent.status, 202);
      await eventually(() => quiet.requests.some((call) => call.headers['webhook-id'] === sent.body.notificationId), 10_000, "the other account's test send during the flood");
      // The flood still holds its slots: nothing above was served by its calls ending.
      assert.equal(inFlightAtFlood(), DEFAULT_CONCURRENCY_LIMITS.overall);
    });
  });
}
