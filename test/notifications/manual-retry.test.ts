// needs: database
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { recoverFailed, retryNow } from '../../src/storage/deliveries.js';
import { insertNotifications, newNotificationRow } from '../../src/storage/repositories/notifications.js';
import { startWorker } from '../../src/worker/start-worker.js';
import type { JobWorker } from '../../src/worker/job-worker.js';
import { testDialects } from '../support/databases.js';
import { tenantWithExperience } from '../support/experiences.js';
import { eventually } from '../support/notifications.js';
import { gate, startHttpReceiver, type Receiver, type Responder } from '../support/receivers.js';
import { api, startTestApp, startTestDatabase, type TestApp, type TestDatabase } from '../support/test-app.js';

/**
 * POST /notifications/{id}/retry is an extra attempt (docs/delivery.md, "Manual retry"): for a
 * pending delivery it uses none of the RETRY_MAX_ATTEMPTS and leaves the schedule as it was; for
 * one that ended it is exactly one attempt. Real receivers on loopback and a short real schedule.
 */
const FAIL = () => ({ status: 500, body: 'down' });
const OK = () => ({ status: 204 });

/** A fresh account, one subscription to `receiver`, and the calls of the notification it gets. */
async function tenant(t: TestApp, receiver: Receiver) {
  const { token } = await tenantWithExperience(t, { prizes: [{ value: 10, stock: null }] });
  const created = await api(t.url, 'POST', '/v2/subscriptions', { token, body: { event: 'registered-request', callback: { url: `${receiver.url}/hook` } } });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const sent = await api(t.url, 'POST', '/v2/requests', { token, body: { experience: 'summer' } });
  assert.equal(sent.status, 202, JSON.stringify(sent.body));
  const listed = await eventually(async () => (await api(t.url, 'GET', `/v2/notifications?requestId=${sent.body.id}`, { token })).body.data[0], 15_000, 'the notification');
  const id = listed.id as string;
  const detail = async () => (await api(t.url, 'GET', `/v2/notifications/${id}`, { token })).body;
  const retry = async () => {
    const retried = await api(t.url, 'POST', `/v2/notifications/${id}/retry`, { token });
    assert.equal(retried.status, 202, JSON.stringify(retried.body));
    assert.equal(retried.body.status, 'pending');
    return retried.body;
  };
  const calls = () => receiver.requests.filter((r) => r.headers['webhook-id'] === id).length;
  const when = (what: string, check: (n: any) => boolean) => eventually(async () => ((n) => check(n) && n)(await detail()), 15_000, what);
  return { token, subscriptionId: created.body._id as string, id, detail, retry, calls, when };
}

for (const dialect of testDialects()) {
  describe(`manual retry of a pending delivery [${dialect}]`, () => {
    // Automatic attempts 1.6 to 2.4 s apart, three of them.
    const INTERVAL = 2_000;
    let t: TestApp;
    let worker: JobWorker;
    const receivers: Receiver[] = [];
    const receiver = async (responder: Responder) => {
      const started = await startHttpReceiver(responder);
      receivers.push(started);
      return started;
    };

    before(async () => {
      t = await startTestApp(dialect, { RETRY_INTERVAL: `${INTERVAL}ms`, RETRY_MAX_ATTEMPTS: '3' });
      worker = startWorker(t.deps, { pollIntervalMs: 25 });
    });
    after(async () => {
      await worker.stop();
      for (const started of receivers) await started.close();
      await t.close();
    });

    it('fails: the delivery stays pending, due when it was, and keeps every automatic attempt', async () => {
      const n = await tenant(t, await receiver(FAIL));
      const first = await n.when('the first attempt', (d) => d.attemptCount === 1 && d.nextAttemptAt !== null);
      const due = first.nextAttemptAt as string;
      await n.retry();
      const afterManual = await n.when('the manual attempt', (d) => d.attemptCount === 2 && d.nextAttemptAt !== null);
      assert.equal(afterManual.status, 'pending');
      assert.equal(afterManual.nextAttemptAt, due, 'the schedule is not moved');
      assert.equal(afterManual.attempts[1].outcome, 'retry');
      assert.ok(Date.parse(afterManual.attempts[1].at) < Date.parse(due), 'the manual attempt went before the automatic one');

      const failed = await n.when('the end', (d) => d.status === 'failed');
      assert.deepEqual(
        failed.attempts.map((a: any) => a.outcome),
        ['retry', 'retry', 'retry', 'failed'],
        'three automatic attempts and the manual one',
      );
      assert.equal(n.calls(), 4);
      const late = Date.parse(failed.attempts[2].at) - Date.parse(due);
      assert.ok(late >= 0 && late < 1_000, `the second automatic attempt came when it was due (${late} ms after)`);
    });

    it('succeeds: the delivery is delivered and no automatic attempt follows', async () => {
      const n = await tenant(t, await receiver((_request, index) => (index === 0 ? FAIL() : OK())));
      const first = await n.when('the first attempt', (d) => d.attemptCount === 1 && d.nextAttemptAt !== null);
      await n.retry();
      const delivered = await n.when('the manual attempt', (d) => d.status === 'succeeded');
      assert.deepEqual(
        delivered.attempts.map((a: any) => a.outcome),
        ['retry', 'succeeded'],
      );
      assert.equal(delivered.nextAttemptAt, null);
      await sleep(Math.max(0, Date.parse(first.nextAttemptAt) - Date.now()) + 300);
      assert.equal(n.calls(), 2, 'nothing at the time the automatic attempt was due');
    });

    it('fails after the automatic attempt fell due: that attempt goes at once, not a whole interval later', async () => {
      let due = Infinity;
      // The manual call is answered only after the automatic attempt's time has passed.
      const n = await tenant(
        t,
        await receiver(async (_request, index) => {
          if (index === 1) await sleep(Math.max(0, due - Date.now()) + 300);
          return index < 2 ? FAIL() : OK();
        }),
      );
      const first = await n.when('the first attempt', (d) => d.attemptCount === 1 && d.nextAttemptAt !== null);
      due = Date.parse(first.nextAttemptAt);
      await n.retry();
      const delivered = await n.when('the automatic attempt', (d) => d.status === 'succeeded');
      assert.deepEqual(
        delivered.attempts.map((a: any) => a.outcome),
        ['retry', 'retry', 'succeeded'],
      );
      const [, manual, automatic] = delivered.attempts;
      const manualEnded = Date.parse(manual.at) + manual.latencyMs;
      assert.ok(manualEnded > due, 'the manual attempt ended after the automatic one was due');
      const gap = Date.parse(automatic.at) - manualEnded;
      assert.ok(gap < 1_000, `the automatic attempt followed at once (${gap} ms), not RETRY_INTERVAL later`);
    });
  });

  describe(`manual retry of a delivery that ended [${dialect}]`, () => {
    let t: TestApp;
    let worker: JobWorker;
    const receivers: Receiver[] = [];
    const receiver = async (responder: Responder) => {
      const started = await startHttpReceiver(responder);
      receivers.push(started);
      return started;
    };

    before(async () => {
      t = await startTestApp(dialect, { RETRY_INTERVAL: '50ms', RETRY_MAX_ATTEMPTS: '4' });
      worker = startWorker(t.deps, { pollIntervalMs: 25 });
    });
    after(async () => {
      await worker.stop();
      for (const started of receivers) await started.close();
      await t.close();
    });

    it('failed after its last attempt: one attempt; failed again if it fails, delivered if it succeeds', async () => {
      const target = await receiver(FAIL);
      const n = await tenant(t, target);
      await n.when('the last automatic attempt', (d) => d.status === 'failed');
      assert.equal(n.calls(), 4);
      await n.retry();
      const again = await n.when('the manual attempt', (d) => d.attemptCount === 5 && d.status !== 'pending');
      assert.equal(again.status, 'failed');
      assert.equal(again.attempts[4].outcome, 'failed');
      await sleep(400);
      assert.equal(n.calls(), 5, 'exactly one call');

      target.respond(OK);
      await n.retry();
      const delivered = await n.when('the second manual attempt', (d) => d.status === 'succeeded');
      assert.equal(delivered.attemptCount, 6);
    });

    it('failed with automatic attempts left (its subscription was off): one attempt, and failed again', async () => {
      const held = gate();
      const target = await receiver(async (_request, index) => {
        if (index === 0) await held.wait;
        return FAIL();
      });
      const n = await tenant(t, target);
      await eventually(() => n.calls() === 1, 15_000, 'the first call');
      // Switched off while the first call is out: the next attempt is refused and ends the delivery.
      assert.equal((await api(t.url, 'PUT', `/v2/subscriptions/${n.subscriptionId}`, { token: n.token, body: { active: false } })).status, 200);
      held.open();
      const refused = await n.when('the refused attempt', (d) => d.status === 'failed');
      assert.deepEqual(
        refused.attempts.map((a: any) => a.outcome),
        ['retry', 'failed'],
      );
      assert.equal(refused.attempts[1].error, 'the subscription is inactive');

      assert.equal((await api(t.url, 'PUT', `/v2/subscriptions/${n.subscriptionId}`, { token: n.token, body: { active: true } })).status, 200);
      await n.retry();
      const again = await n.when('the manual attempt', (d) => d.attemptCount === 3 && d.status !== 'pending');
      assert.equal(again.status, 'failed', 'the two automatic attempts it had left are not resumed');
      await sleep(400);
      assert.equal(n.calls(), 2, 'exactly one call');
    });

    it('delivered: one attempt; failed if it fails, with no automatic attempt after it', async () => {
      const target = await receiver(OK);
      const n = await tenant(t, target);
      await n.when('the delivery', (d) => d.status === 'succeeded');
      target.respond(FAIL);
      await n.retry();
      const again = await n.when('the manual attempt', (d) => d.attemptCount === 2 && d.status !== 'pending');
      assert.equal(again.status, 'failed');
      assert.deepEqual(
        again.attempts.map((a: any) => a.outcome),
        ['succeeded', 'failed'],
      );
      await sleep(400);
      assert.equal(n.calls(), 2, 'exactly one call');
    });
  });

  describe(`what a manual retry writes in the row [${dialect}]`, () => {
    let d: TestDatabase;
    before(async () => {
      d = await startTestDatabase(dialect);
    });
    after(() => d.close());

    const row = async (id: string) => await d.deps.db.selectFrom('notifications').select(['status', 'run_at', 'manual_resume_at', 'manual_attempts']).where('id', '=', id).executeTakeFirstOrThrow();
    const insert = async (changes: Record<string, unknown>) => {
      const notification = {
        ...newNotificationRow({ accountId: 'acc_manual', requestId: 'req_manual', subscriptionId: null, event: 'registered-requests', url: 'https://example.com/hook', payload: '{}' }, 1_000),
        ...changes,
      };
      await insertNotifications(d.deps.db, [notification]);
      return notification.id;
    };

    it('a pending one: when its automatic attempt was due, kept by a second retry; a held one: the retry time; an ended one: 0', async () => {
      const pending = await insert({ attempt_count: 1, run_at: 50_000 });
      await retryNow(d.deps.db, pending, 2_000);
      assert.deepEqual({ ...(await row(pending)) }, { status: 'pending', run_at: 2_000, manual_resume_at: 50_000, manual_attempts: null });
      await retryNow(d.deps.db, pending, 3_000);
      assert.deepEqual({ ...(await row(pending)) }, { status: 'pending', run_at: 3_000, manual_resume_at: 50_000, manual_attempts: null }, 'the second retry keeps the due time');

      const heldBehind = await insert({ run_at: null, waits_for: 'msg_other' });
      await retryNow(d.deps.db, heldBehind, 4_000);
      assert.equal((await row(heldBehind)).manual_resume_at, 4_000);

      const failed = await insert({ status: 'failed', attempt_count: 4, run_at: null, completed_at: 1_500 });
      await retryNow(d.deps.db, failed, 5_000);
      assert.deepEqual({ ...(await row(failed)) }, { status: 'pending', run_at: 5_000, manual_resume_at: 0, manual_attempts: null });

      // Recovery takes a failed notification back for an automatic attempt: a mark left on it is cleared.
      await sql`update notifications set status = 'failed', completed_at = 6000, run_at = null where id = ${failed}`.execute(d.deps.db);
      assert.deepEqual(await recoverFailed(d.deps.db, [failed], { since: 0, until: 10_000 }, 7_000), [failed]);
      assert.equal((await row(failed)).manual_resume_at, null);
    });
  });
}
