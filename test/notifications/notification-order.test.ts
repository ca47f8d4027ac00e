// needs: database
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startWorker } from '../../src/worker/start-worker.js';
import type { JobWorker } from '../../src/worker/job-worker.js';
import { testDialects } from '../support/databases.js';
import { tenantWithExperience } from '../support/experiences.js';
import { eventually } from '../support/notifications.js';
import { startHttpReceiver, type Receiver, type RecordedRequest } from '../support/receivers.js';
import { api, startTestApp, type ClientCredentials, type TestApp } from '../support/test-app.js';
import type { Db, Tx } from '../../src/storage/database.js';
import { orderKey } from '../../src/domain/notifications/order.js';
import { failRun, releaseWaitingFor, RUNS_WITHOUT_OUTCOME } from '../../src/storage/deliveries.js';
import { findPendingRegistered, insertNotifications, markHasWaiters, newNotificationRow, recordAttempts } from '../../src/storage/repositories/notifications.js';

/**
 * Notification order (docs/delivery.md, "Order"): per request and callback URL, a request's
 * processed-requests is not sent before its registered-requests to the same URL has ended
 * (delivered, or failed after its last attempt). RETRY_INTERVAL is 1 s, so that without the hold
 * the processed notification would arrive while the registered one waits for its retry.
 */
/** A transaction held open until `commit()`: two of them interleave as two workers' would. */
async function openTransaction(db: Db): Promise<{ tx: Tx; commit(): Promise<void> }> {
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => (finish = resolve));
  let ready!: (tx: Tx) => void;
  const opened = new Promise<Tx>((resolve) => (ready = resolve));
  const done = db.transaction().execute(async (tx) => {
    ready(tx);
    await finished;
  });
  const tx = await opened;
  return {
    tx,
    commit: async () => {
      finish();
      await done;
    },
  };
}

interface Call {
  event: string;
  requestId: string;
  status: number;
}

for (const dialect of testDialects()) {
  describe(`notification order [${dialect}]`, () => {
    let t: TestApp;
    let worker: JobWorker;
    let client: ClientCredentials;
    let token: string;
    const receivers: Receiver[] = [];

    before(async () => {
      t = await startTestApp(dialect, { RETRY_INTERVAL: '1s', RETRY_MAX_ATTEMPTS: '2' });
      worker = startWorker(t.deps, { pollIntervalMs: 25 });
    });
    after(async () => {
      await worker.stop();
      for (const receiver of receivers) await receiver.close();
      await t.close();
    });

    const tenant = async () => {
      ({ client, token } = await tenantWithExperience(t, { title: 'Summer campaign', prizes: [{ id: 'cpn-10', bucket: 'coupons', value: 10, quantity: 1, kind: 'coupon', stock: 100 }] }));
    };
    const subscribe = async (event: string, url: string) => {
      const created = await api(t.url, 'POST', '/v2/subscriptions', { token, body: { event, callback: { url } } });
      assert.equal(created.status, 201, JSON.stringify(created.body));
    };
    const send = async () => {
      const response = await api(t.url, 'POST', '/v2/requests', { token, body: { experience: 'summer' } });
      assert.equal(response.status, 202, JSON.stringify(response.body));
      return response.body.id as string;
    };
    /** A receiver that answers `status(call)` and logs each call with the status it answered. */
    const receiver = async (status: (event: string, requestId: string, nth: number) => number) => {
      const calls: Call[] = [];
      const started = await startHttpReceiver((request: RecordedRequest) => {
        const event = String(request.headers['x-webhook-event']);
        const requestId = String(JSON.parse(request.body).id);
        const nth = calls.filter((c) => c.event === event && c.requestId === requestId).length;
        const call = { event, requestId, status: status(event, requestId, nth) };
        calls.push(call);
        return { status: call.status };
      });
      receivers.push(started);
      return { url: started.url, calls };
    };
    const of = (calls: Call[], requestId: string) => calls.filter((c) => c.requestId === requestId).map((c) => `${c.event === 'registered-requests' ? 'registered' : 'processed'} ${c.status}`);
    const log = async (requestId: string) => (await api(t.url, 'GET', `/v2/notifications?requestId=${requestId}`, { token })).body.data as any[];

    it('one URL for both events, registered fails once: registered (503), registered (2xx), then processed; the held one says what it waits for', async () => {
      await tenant();
      const r = await receiver((event, _id, nth) => (event === 'registered-requests' && nth === 0 ? 503 : 204));
      await subscribe('registered-request', `${r.url}/hook`);
      await subscribe('processed-request', `${r.url}/hook`);
      const requestId = await send();

      // While the registered notification waits for its retry, the processed one is held.
      const held = await eventually(async () => (await log(requestId)).find((n) => n.event === 'processed-requests'), 15_000, 'processed notification written');
      const registered = (await log(requestId)).find((n) => n.event === 'registered-requests');
      assert.equal(held.status, 'pending');
      assert.equal(held.waitingFor, registered.id);
      assert.equal(held.nextAttemptAt, null);
      const detail = (await api(t.url, 'GET', `/v2/notifications/${held.id}`, { token })).body;
      assert.equal(detail.waitingFor, registered.id);

      await eventually(() => of(r.calls, requestId).length === 3, 15_000, 'three calls');
      assert.deepEqual(of(r.calls, requestId), ['registered 503', 'registered 204', 'processed 204']);
      const done = await eventually(
        async () => {
          const rows = await log(requestId);
          return rows.every((n) => n.status === 'succeeded') && rows;
        },
        15_000,
        'both succeeded',
      );
      assert.ok(done.every((n) => n.waitingFor === undefined));
    });

    it('registered fails for good: processed goes out after its last attempt', async () => {
      await tenant();
      const r = await receiver((event) => (event === 'registered-requests' ? 500 : 204));
      await subscribe('registered-request', `${r.url}/hook`);
      await subscribe('processed-request', `${r.url}/hook`);
      const requestId = await send();
      await eventually(() => of(r.calls, requestId).length === 3, 15_000, 'three calls');
      assert.deepEqual(of(r.calls, requestId), ['registered 500', 'registered 500', 'processed 204']);
      const rows = await eventually(
        async () => {
          const found = await log(requestId);
          return found.length === 2 && found.every((n) => n.status !== 'pending') && found;
        },
        15_000,
        'ended',
      );
      assert.equal(rows.find((n) => n.event === 'registered-requests').status, 'failed');
      assert.equal(rows.find((n) => n.event === 'processed-requests').status, 'succeeded');
    });

    it('one receiver, a path per event: processed waits for registered to the same origin', async () => {
      await tenant();
      const r = await receiver((event, _id, nth) => (event === 'registered-requests' && nth === 0 ? 503 : 204));
      await subscribe('registered-request', `${r.url}/hooks/registered`);
      await subscribe('processed-request', `${r.url}/hooks/processed?v=2`);
      const requestId = await send();
      await eventually(() => of(r.calls, requestId).length === 3, 15_000, 'three calls');
      assert.deepEqual(of(r.calls, requestId), ['registered 503', 'registered 204', 'processed 204']);
    });

    it('a per-request registeredCallbackUrl and a processed subscription at the same receiver keep the order', async () => {
      await tenant();
      const r = await receiver((event, _id, nth) => (event === 'registered-requests' && nth === 0 ? 503 : 204));
      await subscribe('processed-request', `${r.url}/hooks/processed`);
      const response = await api(t.url, 'POST', '/v2/requests', { token, body: { experience: 'summer', registeredCallbackUrl: `${r.url}/orders/registered` } });
      assert.equal(response.status, 202, JSON.stringify(response.body));
      const requestId = response.body.id as string;
      await eventually(() => of(r.calls, requestId).length === 3, 15_000, 'three calls');
      assert.deepEqual(of(r.calls, requestId), ['registered 503', 'registered 204', 'processed 204']);
    });

    it('two receivers (origins): processed is not held behind a registered retry to another receiver', async () => {
      await tenant();
      const reg = await receiver((_event, _id, nth) => (nth === 0 ? 503 : 204));
      const proc = await receiver(() => 204);
      await subscribe('registered-request', `${reg.url}/registered`);
      await subscribe('processed-request', `${proc.url}/processed`);
      const requestId = await send();
      await eventually(() => of(proc.calls, requestId).length === 1, 15_000, 'processed');
      // Sent while the registered notification still waits for its retry (1 s away).
      assert.deepEqual(of(reg.calls, requestId), ['registered 503']);
      const processed = (await log(requestId)).find((n) => n.event === 'processed-requests');
      assert.equal(processed.waitingFor, undefined);
      await eventually(() => of(reg.calls, requestId).length === 2, 15_000, 'registered retried');
    });

    it('different requests keep no order among themselves', async () => {
      await tenant();
      let first: string | undefined;
      const r = await receiver((event, requestId, nth) => (event === 'registered-requests' && requestId === first && nth === 0 ? 503 : 204));
      await subscribe('registered-request', `${r.url}/hook`);
      await subscribe('processed-request', `${r.url}/hook`);
      first = await send();
      await eventually(() => of(r.calls, first).length === 1, 15_000, 'first registered');
      const second = await send();
      await eventually(() => of(r.calls, second).length === 2, 15_000, 'second request both events');
      // The second request's processed went out while the first one's registered waits for its retry.
      assert.deepEqual(of(r.calls, second), ['registered 204', 'processed 204']);
      assert.deepEqual(of(r.calls, first), ['registered 503']);
      await eventually(() => of(r.calls, first).length === 3, 15_000, 'first request done');
      assert.deepEqual(of(r.calls, first), ['registered 503', 'registered 204', 'processed 204']);
    });
    if (dialect === 'postgres') {
      it('two workers race (PostgreSQL): whichever commits first, a held processed notification is released', async () => {
        await tenant();
        const requestId = await send();
        const db = t.deps.db;
        const url = 'http://127.0.0.1:9/race';
        const now = Date.now();
        // Written by hand and not due (this file's worker must not take them meanwhile): the transactions below play the workers.
        const row = (event: 'registered-requests' | 'processed-requests') => ({
          ...newNotificationRow({ accountId: client.accountId, requestId, subscriptionId: null, event, url, payload: '{}' }, now),
          run_at: null,
        });
        const stillHeld = async (id: string) => (await db.selectFrom('notifications').select('waits_for').where('id', '=', id).executeTakeFirstOrThrow()).waits_for;
        const dueOrTried = async (id: string) => {
          const found = await db.selectFrom('notifications').select(['run_at', 'attempt_count']).where('id', '=', id).executeTakeFirstOrThrow();
          return Number(found.run_at) === now || found.attempt_count > 0;
        };
        // A registered notification held by a delivery at its last run (written leased, not due: no
        // worker claims it), and that run ending it failed, as a worker's would.
        const leased = (notification: ReturnType<typeof row>) => ({ ...notification, lease: `w-test:${notification.id}`, lease_until: now + 60_000, runs: RUNS_WITHOUT_OUTCOME });
        const endFailed = async (tx: Tx, notification: ReturnType<typeof leased>) => {
          const delivery = { id: notification.id, accountId: notification.account_id, runs: notification.runs, lease: notification.lease, leaseUntil: notification.lease_until, createdAt: now };
          assert.equal((await failRun(tx, delivery, 'ended', now)).state, 'failed');
        };

        // The registered notification ends first (not yet committed): processing waits on its lock, then sees it ended.
        const first = leased(row('registered-requests'));
        await insertNotifications(db, [first]);
        const ending = await openTransaction(db);
        await endFailed(ending.tx, first);
        await releaseWaitingFor(ending.tx, [first.id], now);
        const processing = await openTransaction(db);
        const found = findPendingRegistered(processing.tx, [{ requestId, url }]);
        const settled = await Promise.race([found.then(() => 'read'), new Promise((resolve) => setTimeout(() => resolve('waiting'), 200))]);
        assert.equal(settled, 'waiting', 'the locked read waits for the ending transaction');
        await ending.commit();
        assert.equal((await found).size, 0, 'ended: nothing to wait for');
        await processing.commit();

        // Processing locks first: the ending transaction waits for its commit, then releases what it held.
        const second = leased(row('registered-requests'));
        await insertNotifications(db, [second]);
        const processing2 = await openTransaction(db);
        const waitsFor = await findPendingRegistered(processing2.tx, [{ requestId, url }]);
        assert.equal(waitsFor.get(orderKey(requestId, url)), second.id);
        const held = { ...row('processed-requests'), waits_for: second.id };
        await insertNotifications(processing2.tx, [held]);
        const ending2 = await openTransaction(db);
        const ended = (async () => {
          await endFailed(ending2.tx, second);
          await releaseWaitingFor(ending2.tx, [second.id], now);
        })();
        await new Promise((resolve) => setTimeout(resolve, 200));
        await processing2.commit();
        await ended;
        await ending2.commit();
        assert.equal(await stillHeld(held.id), null, 'released');
        assert.ok(await dueOrTried(held.id), 'and due now (or already tried by the worker)');

        // The attempt log's path: the statement ending the registered notification waits for the
        // holder's commit, then answers its has_waiters flag, so the release runs.
        const third = { ...row('registered-requests'), lease: 'w-test:third', lease_until: now + 60_000 };
        await insertNotifications(db, [third]);
        const processing3 = await openTransaction(db);
        const waitsFor3 = (await findPendingRegistered(processing3.tx, [{ requestId, url }])).get(orderKey(requestId, url))!;
        assert.equal(waitsFor3, third.id);
        const held3 = { ...row('processed-requests'), waits_for: waitsFor3 };
        await markHasWaiters(processing3.tx, [waitsFor3]);
        await insertNotifications(processing3.tx, [held3]);
        const ending3 = await openTransaction(db);
        const attempt = {
          notification_id: third.id,
          attempt: 1,
          started_at: now,
          url,
          status_code: 204,
          latency_ms: 1,
          response_body: null,
          error: null,
          outcome: 'succeeded' as const,
          request_headers: null,
          retry_after: null,
        };
        const waited = recordAttempts(ending3.tx, [{ attempt, lease: third.lease, status: 'succeeded', nextAttemptAt: null, now }]);
        await new Promise((resolve) => setTimeout(resolve, 200));
        await processing3.commit();
        assert.deepEqual([...(await waited).waitedFor], [third.id], 'the ending statement saw the flag the holder committed');
        await releaseWaitingFor(ending3.tx, [...(await waited).waitedFor], now);
        await ending3.commit();
        assert.equal(await stillHeld(held3.id), null, 'released');
      });
    }
  });
}
