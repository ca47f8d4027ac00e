// needs: database
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startWorker } from '../../src/worker/start-worker.js';
import { DELIVERIES } from '../../src/storage/deliveries.js';
import type { JobWorker } from '../../src/worker/job-worker.js';
import { testDialects } from '../support/databases.js';
import { tenantWithExperience } from '../support/experiences.js';
import { eventually } from '../support/notifications.js';
import { gate, startHttpReceiver, type Receiver } from '../support/receivers.js';
import { api, startTestApp, type TestApp } from '../support/test-app.js';

/**
 * /metrics for the delivery engine: attempt counters by outcome, the attempt-duration histogram
 * and the queue gauges, read over HTTP from the running app while the real worker delivers.
 */

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses the Prometheus text exposition format (one sample per non-comment line). */
function parseMetrics(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$/.exec(line);
    assert.ok(match, `unparsable metrics line: ${line}`);
    const labels: Record<string, string> = {};
    for (const pair of match[2]?.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g) ?? []) labels[pair[1]!] = pair[2]!;
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

for (const dialect of testDialects()) {
  describe(`notification metrics [${dialect}]`, () => {
    let t: TestApp;
    let token: string;
    let receiver: Receiver;
    const workers: JobWorker[] = [];
    let deliverer: JobWorker | undefined;
    /** The real worker (every handler); started once. */
    const startDeliverer = () => {
      if (!deliverer) workers.push((deliverer = startWorker(t.deps, { pollIntervalMs: 25 })));
    };

    /** Sum of the samples named `name` whose labels include `labels` (0 when there is none). */
    const metric = async (name: string, labels: Record<string, string> = {}): Promise<number> => {
      const response = await fetch(`${t.url}/metrics`);
      assert.equal(response.status, 200);
      assert.match(String(response.headers.get('content-type')), /^text\/plain/);
      return parseMetrics(await response.text())
        .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
        .reduce((sum, s) => sum + s.value, 0);
    };
    const exposes = async (name: string) => (await (await fetch(`${t.url}/metrics`)).text()).includes(`# TYPE ${name} `);

    before(async () => {
      t = await startTestApp(dialect, { RETRY_INTERVAL: '50ms', RETRY_MAX_ATTEMPTS: '2' });
      ({ token } = await tenantWithExperience(t, { prizes: [{ value: 5, stock: null }] }));
      receiver = await startHttpReceiver();
      const created = await api(t.url, 'POST', '/v2/subscriptions', { token, body: { event: 'registered-request', callback: { url: `${receiver.url}/hook` } } });
      assert.equal(created.status, 201, JSON.stringify(created.body));
    });
    after(async () => {
      for (const worker of workers) await worker.stop();
      await receiver.close();
      await t.close();
    });

    const send = async () => {
      const response = await api(t.url, 'POST', '/v2/requests', { token, body: { experience: 'summer' } });
      assert.equal(response.status, 202, JSON.stringify(response.body));
      return response.body.id as string;
    };

    it('exposes every delivery metric with its type', async () => {
      for (const name of ['rewards_webhook_attempts_total', 'rewards_webhook_delivery_seconds', 'rewards_jobs_pending', 'rewards_jobs_oldest_due_age_seconds', 'rewards_notifications_pending']) {
        assert.ok(await exposes(name), `${name} is missing from /metrics`);
      }
      const text = await (await fetch(`${t.url}/metrics`)).text();
      assert.match(text, /# TYPE rewards_webhook_attempts_total counter/);
      assert.match(text, /# TYPE rewards_webhook_delivery_seconds histogram/);
      assert.match(text, /# TYPE rewards_jobs_pending gauge/);
    });

    it('queue gauges: a due delivery nobody has claimed ages; while in flight it is pending; once delivered everything drops to 0', async () => {
      // Register the request with a worker that runs only the request jobs (no deliverer): the
      // notification is committed, due, and not claimed by anyone.
      const registrar = startWorker(t.deps, { deliverer: null, autoStart: false });
      workers.push(registrar);
      const hold = gate();
      receiver.respond(async () => {
        await hold.wait;
        return { status: 204 };
      });
      const succeededBefore = await metric('rewards_webhook_attempts_total', { event: 'registered-requests', outcome: 'succeeded' });
      const observedBefore = await metric('rewards_webhook_delivery_seconds_count', { event: 'registered-requests' });

      await send();
      await registrar.runUntilIdle();
      assert.equal(await metric('rewards_notifications_pending'), 1);
      assert.equal(await metric('rewards_jobs_pending', { kind: DELIVERIES }), 1);
      await eventually(async () => (await metric('rewards_jobs_oldest_due_age_seconds')) > 0, 10_000, 'the due delivery to age');

      // The real worker claims it; the receiver holds the answer.
      startDeliverer();
      await eventually(() => receiver.requests.length === 1, 10_000, 'the call');
      assert.equal(await metric('rewards_notifications_pending'), 1, 'in flight is still pending');
      assert.equal(await metric('rewards_jobs_pending', { kind: DELIVERIES }), 1, 'a claimed delivery is still pending');
      assert.equal(await metric('rewards_jobs_oldest_due_age_seconds'), 0, 'a claimed delivery is not waiting');

      hold.open();
      await eventually(async () => (await metric('rewards_notifications_pending')) === 0, 10_000, 'delivery');
      assert.equal(await metric('rewards_jobs_pending', { kind: DELIVERIES }), 0);
      assert.equal(await metric('rewards_webhook_attempts_total', { event: 'registered-requests', outcome: 'succeeded' }), succeededBefore + 1);
      assert.equal(await metric('rewards_webhook_delivery_seconds_count', { event: 'registered-requests' }), observedBefore + 1);
      // Every observation falls in the +Inf bucket, and the held call took a measurable time.
      assert.equal(await metric('rewards_webhook_delivery_seconds_bucket', { event: 'registered-requests', le: '+Inf' }), observedBefore + 1);
      assert.ok((await metric('rewards_webhook_delivery_seconds_sum', { event: 'registered-requests' })) > 0);
    });

    it('attempt counters grow by outcome: succeeded, retry, failed', async () => {
      startDeliverer();
      const count = (outcome: string) => metric('rewards_webhook_attempts_total', { event: 'registered-requests', outcome });
      const before = { succeeded: await count('succeeded'), retry: await count('retry'), failed: await count('failed') };
      const observedBefore = await metric('rewards_webhook_delivery_seconds_count', { event: 'registered-requests' });

      receiver.respond(() => ({ status: 204 }));
      await send();
      await send();
      await send();
      await eventually(async () => (await count('succeeded')) === before.succeeded + 3, 10_000, 'three successes');

      // RETRY_MAX_ATTEMPTS=2: a failing receiver gives one retry, then failed.
      receiver.respond(() => ({ status: 500 }));
      await send();
      await eventually(async () => (await count('failed')) === before.failed + 1, 10_000, 'a failure');
      assert.equal(await count('retry'), before.retry + 1);
      assert.equal(await count('succeeded'), before.succeeded + 3);
      assert.equal(await metric('rewards_webhook_delivery_seconds_count', { event: 'registered-requests' }), observedBefore + 5);
      const buckets = parseMetrics(await (await fetch(`${t.url}/metrics`)).text()).filter((s) => s.name === 'rewards_webhook_delivery_seconds_bucket' && s.labels.event === 'registered-requests');
      assert.ok(buckets.length > 2, 'the histogram has buckets');
      for (let i = 1; i < buckets.length; i++) assert.ok(buckets[i]!.value >= buckets[i - 1]!.value, 'buckets are cumulative');
      assert.equal(await metric('rewards_notifications_pending'), 0);
    });

    it('queue counters are exposed; claims count by loop, wake-ups by source', async () => {
      for (const name of [
        'rewards_job_claims_total',
        'rewards_job_claimed_total',
        'rewards_job_wakeups_total',
        'rewards_job_lease_renewals_total',
        'rewards_job_leases_renewed_total',
        'rewards_job_leases_lost_total',
      ]) {
        assert.ok(await exposes(name), `${name} is missing from /metrics`);
      }
      startDeliverer();
      const localBefore = await metric('rewards_job_wakeups_total', { source: 'local' });
      receiver.respond(() => ({ status: 204 }));
      const delivered = receiver.requests.length;
      await send();
      await eventually(() => receiver.requests.length === delivered + 1, 10_000, 'the delivery');
      assert.ok((await metric('rewards_job_wakeups_total', { source: 'local' })) > localBefore, 'the enqueue woke the worker');
      // Idle, the delivery loop wakes on its poll (25 ms here) and claims nothing.
      const pollsBefore = await metric('rewards_job_wakeups_total', { source: 'poll' });
      const claimsBefore = await metric('rewards_job_claims_total', { loop: 'delivery' });
      const claimedBefore = await metric('rewards_job_claimed_total', { loop: 'delivery' });
      await eventually(async () => (await metric('rewards_job_wakeups_total', { source: 'poll' })) > pollsBefore + 2, 10_000, 'idle polls');
      // The polls counted may all be the transactional loop's (same interval) while the delivery
      // loop's claim waits for the one SQLite connection: wait for the delivery loop's own.
      await eventually(async () => (await metric('rewards_job_claims_total', { loop: 'delivery' })) > claimsBefore, 10_000, 'an idle poll of the delivery loop claims');
      assert.equal(await metric('rewards_job_claimed_total', { loop: 'delivery' }), claimedBefore, 'and gets nothing');
    });
  });
}
