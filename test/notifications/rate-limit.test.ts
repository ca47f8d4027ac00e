// needs: database
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { createDeps, type Deps } from '../../src/deps.js';
import { countRateWindowTurns } from '../../src/storage/repositories/rate-windows.js';
import type { JobWorker } from '../../src/worker/job-worker.js';
import { turnTime } from '../../src/worker/notifications/rate-limiter.js';
import { startWorker } from '../../src/worker/start-worker.js';
import { testDialects } from '../support/databases.js';
import { tenantWithExperience } from '../support/experiences.js';
import { eventually } from '../support/notifications.js';
import { startHttpReceiver, type Receiver } from '../support/receivers.js';
import { sendRequests } from '../support/requests.js';
import { api, startTestApp, type TestApp } from '../support/test-app.js';

/**
 * A subscription's `rateLimit` (deliveries per second) against real receivers: a burst drains at
 * most `rateLimit` calls per calendar second, across workers, each notification with one attempt
 * (waiting for a turn uses none); other subscriptions are not slowed; lifting the limit lets the
 * waiting deliveries go at once; a test send is not held back.
 */

/** A 204 receiver that records when each call arrived, by path. */
async function timedReceiver(host?: string): Promise<Receiver & { times(path: string): number[] }> {
  const arrivals: Array<{ path: string; at: number }> = [];
  const receiver = await startHttpReceiver((request) => {
    arrivals.push({ path: request.path, at: Date.now() });
    return { status: 204 };
  }, host);
  return Object.assign(receiver, { times: (path: string) => arrivals.filter((a) => a.path === path).map((a) => a.at) });
}

/**
 * The first calls of a fresh instance wait for its outbound thread and connections (hundreds of
 * ms on PostgreSQL's first test): calls granted in two windows then arrive together. One call
 * first, so receive times measure the limiter, not the warm-up.
 */
async function warmUp(deps: Deps): Promise<void> {
  const receiver = await startHttpReceiver();
  try {
    const result = await deps.outbound.deliverAttempt({
      accountId: 'acc_warm_up',
      url: `${receiver.url}/warm-up`,
      body: '{}',
      eventType: 'registered-requests',
      msgId: 'msg_warm_up',
      secrets: [`whsec_${randomBytes(32).toString('base64')}`],
    });
    assert.equal(result.ok, true, JSON.stringify(result));
  } finally {
    await receiver.close();
  }
}

/**
 * What a receiver can rely on, checked by receive time: any sliding second holds at most
 * 2 × `limit` calls (the documented tolerance: at most `limit` calls start per window, and the end
 * of one window and the start of the next fit in one sliding second), and `n` calls take at least
 * ceil(n / limit) − 1 windows. Receive times add the machine's delays to start times, and not
 * evenly (a window's first call may open a connection, a later one reuses it): a call that starts
 * a second after another can arrive a little less than a second after it. The check leaves them
 * RECEIVE_JITTER_MS of room; without the limit, a burst arrives within milliseconds and fails both.
 */
const RECEIVE_JITTER_MS = 100;
function assertAtMostPerSecond(times: number[], limit: number, what: string): void {
  const sorted = [...times].sort((a, b) => a - b);
  const start = sorted[0]!;
  const shown = () => `received at +${sorted.map((at) => at - start).join(' ms, +')} ms`;
  let busiest = 0;
  for (let i = 0; i < sorted.length; i++) {
    let j = i;
    while (j < sorted.length && sorted[j]! - sorted[i]! < 1000 - RECEIVE_JITTER_MS) j++;
    busiest = Math.max(busiest, j - i);
  }
  assert.ok(busiest <= 2 * limit, `${what}: ${busiest} calls in one sliding second, limit ${limit} (tolerance 2 × limit); ${shown()}`);
  const windows = Math.ceil(sorted.length / limit) - 1;
  // The windows are the worker's; arrivals lag their turns by a varying delay, the same room as above.
  assert.ok(
    sorted.at(-1)! - start >= (windows - 1) * 1000 - RECEIVE_JITTER_MS,
    `${what}: ${sorted.length} calls in ${sorted.at(-1)! - start} ms, at ${limit}/s they need ${windows} windows; ${shown()}`,
  );
}

describe('rate limit turns (pure)', () => {
  it('within the limit now; the k-th turn over it ceil(k / limit) windows later, in turn order over the first 100 ms', () => {
    assert.equal(turnTime(5_000, 1, 2), undefined);
    assert.equal(turnTime(5_000, 2, 2), undefined);
    assert.deepEqual(
      [3, 4, 5, 6, 7].map((position) => turnTime(5_000, position, 2)),
      [6_000, 6_050, 7_000, 7_050, 8_000],
    );
    assert.deepEqual(
      [2, 3, 4].map((position) => turnTime(0, position, 1)),
      [1_000, 2_000, 3_000],
    );
    assert.equal(turnTime(0, 10_001 + 9_999, 10_000), 1_099);
  });
});

for (const dialect of testDialects()) {
  describe(`subscription rateLimit [${dialect}]`, () => {
    let t: TestApp;
    let token: string;

    before(async () => {
      t = await startTestApp(dialect, { RETRY_INTERVAL: '50ms', RETRY_MAX_ATTEMPTS: '3' });
      await warmUp(t.deps);
    });
    after(() => t.close());

    /** A fresh account with the `summer` experience: tests never see each other's subscriptions. */
    const tenant = async () => {
      ({ token } = await tenantWithExperience(t, { prizes: [{ id: 'cpn', value: 10, stock: null }] }));
    };
    const subscribe = async (url: string, extra: Record<string, unknown> = {}) => {
      const created = await api(t.url, 'POST', '/v2/subscriptions', { token, body: { event: 'registered-requests', callback: { url }, ...extra } });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      return created.body as { _id: string; rateLimit?: number };
    };
    const notificationsOf = async (subscriptionId: string) => (await api(t.url, 'GET', `/v2/notifications?subscriptionId=${subscriptionId}&limit=200`, { token })).body.data as any[];
    /** Every notification of the subscription succeeded with exactly one attempt (waiting for a turn used none). */
    const assertOneAttemptEach = async (subscriptionId: string, count: number) => {
      const notifications = await eventually(
        async () => {
          const all = await notificationsOf(subscriptionId);
          return all.length === count && all.every((n) => n.status === 'succeeded') && all;
        },
        10_000,
        `${count} notifications succeeded`,
      );
      assert.deepEqual(
        notifications.map((n) => n.attemptCount),
        Array(count).fill(1),
      );
      const attempts = await t.deps.db
        .selectFrom('notification_attempts')
        .innerJoin('notifications', 'notifications.id', 'notification_attempts.notification_id')
        .select(['notification_attempts.outcome'])
        .where('notifications.subscription_id', '=', subscriptionId)
        .execute();
      assert.deepEqual(
        attempts.map((a) => a.outcome),
        Array(count).fill('succeeded'),
        'one attempt row per notification',
      );
    };

    it('rateLimit 2: a burst of 12 reaches the receiver at most 2 per second, each notification with one attempt; an unlimited subscription is not slowed', async () => {
      const worker = startWorker(t.deps, { pollIntervalMs: 25 });
      const receiver = await timedReceiver();
      // On an address of its own: the unlimited calls share no per-address cap with the limited ones, which would
      // otherwise wait behind them after their turn and arrive bunched with the next window's.
      const other = await timedReceiver('127.0.0.2');
      try {
        await tenant();
        const limited = await subscribe(`${receiver.url}/limited`, { rateLimit: 2 });
        assert.equal(limited.rateLimit, 2);
        const free = await subscribe(`${other.url}/free`);
        await sendRequests(t.url, token, 12);

        await eventually(() => receiver.times('/limited').length >= 12, 20_000, 'twelve limited calls');
        const limitedTimes = receiver.times('/limited');
        const freeTimes = other.times('/free');
        assert.equal(freeTimes.length, 12);
        // At most 2 in any second, and the 12 spread over at least 5 windows after the first.
        assertAtMostPerSecond(limitedTimes, 2, 'rateLimit 2');
        // The same burst without a limit is not held back by the limited subscription's waits.
        assert.ok(Math.max(...freeTimes) < limitedTimes.sort((a, b) => a - b)[4]!, 'every unlimited call arrived before the fifth limited one');
        assert.ok(Math.max(...freeTimes) - Math.min(...freeTimes) < 2_000, 'the unlimited calls came together');
        await new Promise((resolve) => setTimeout(resolve, 200));
        assert.equal(receiver.times('/limited').length, 12, 'no call was made twice');
        await assertOneAttemptEach(limited._id, 12);
        await assertOneAttemptEach(free._id, 12);
      } finally {
        await worker.stop();
        await receiver.close();
        await other.close();
      }
    });

    it('two workers (PostgreSQL: two instances, each with its own pool) together keep to the limit', async () => {
      const receiver = await timedReceiver();
      // On SQLite a second connection in the same process would block the thread on the write
      // lock: the second worker shares the deps (its own claims, batches and limiter all the same).
      const second: Deps = dialect === 'postgres' ? await createDeps({ ...t.config, databaseUrl: t.databaseUrl }, { prepare: false }) : t.deps;
      if (second !== t.deps) await warmUp(second);
      const workers: JobWorker[] = [startWorker(t.deps, { pollIntervalMs: 25, deliveryCapacity: 2 }), startWorker(second, { pollIntervalMs: 25, deliveryCapacity: 2 })];
      try {
        await tenant();
        const limited = await subscribe(`${receiver.url}/shared`, { rateLimit: 2 });
        await sendRequests(t.url, token, 12);
        await eventually(() => receiver.times('/shared').length >= 12, 20_000, 'twelve calls');
        assertAtMostPerSecond(receiver.times('/shared'), 2, 'two workers, rateLimit 2');
        await assertOneAttemptEach(limited._id, 12);
        if (second !== t.deps) {
          const delivered = async (deps: Deps) => (await deps.metrics.deliveryAttempts.get()).values.reduce((sum, v) => sum + v.value, 0);
          assert.ok((await delivered(t.deps)) > 0 && (await delivered(second)) > 0, 'both instances delivered');
        }
      } finally {
        for (const worker of workers) await worker.stop();
        if (second !== t.deps) await second.close();
        await receiver.close();
      }
    });

    it('a waiting delivery shows as pending with its next attempt time and no attempt; PUT rateLimit: null lets the rest go at once', async () => {
      const worker = startWorker(t.deps, { pollIntervalMs: 25 });
      const receiver = await timedReceiver();
      try {
        await tenant();
        const limited = await subscribe(`${receiver.url}/lifted`, { rateLimit: 1 });
        await sendRequests(t.url, token, 12);
        const waiting = await eventually(
          async () => {
            const all = await notificationsOf(limited._id);
            const later = all.filter((n) => n.status === 'pending' && n.nextAttemptAt !== null && Date.parse(n.nextAttemptAt) > Date.now() + 3_000);
            return all.length === 12 && later.length > 0 && later;
          },
          10_000,
          'deliveries waiting for a later turn',
        );
        for (const n of waiting) {
          assert.equal(n.attemptCount, 0, 'waiting for a turn uses no attempt');
          assert.equal(n.lastError, null);
        }
        const rows = await t.deps.db.selectFrom('notifications').select(['runs', 'lease', 'postponed']).where('id', '=', waiting[0].id).execute();
        assert.deepEqual(rows, [{ runs: 0, lease: null, postponed: 1 }], 'it waits unleased, without a counted run, marked as waiting for its turn');
        const detail = await api(t.url, 'GET', `/v2/notifications/${waiting[0].id}`, { token });
        assert.deepEqual(detail.body.attempts, []);

        const received = receiver.times('/lifted').length;
        assert.ok(received < 6, `at 1 per second most are still waiting: ${received} received`);
        const lifted = await api(t.url, 'PUT', `/v2/subscriptions/${limited._id}`, { token, body: { rateLimit: null } });
        assert.equal(lifted.status, 200, JSON.stringify(lifted.body));
        assert.equal('rateLimit' in lifted.body, false);
        const liftedAt = Date.now();
        await eventually(() => receiver.times('/lifted').length >= 12, 10_000, 'the rest');
        const rest = receiver.times('/lifted').slice(received);
        assert.ok(Math.max(...rest) - liftedAt < 1_500, `the ${rest.length} waiting went at once, not one per second: last +${Math.max(...rest) - liftedAt} ms`);
        await assertOneAttemptEach(limited._id, 12);
      } finally {
        await worker.stop();
        await receiver.close();
      }
    });

    it('a test send takes its turn but is not held back behind the waiting deliveries', async () => {
      const worker = startWorker(t.deps, { pollIntervalMs: 25 });
      const receiver = await timedReceiver();
      try {
        await tenant();
        const limited = await subscribe(`${receiver.url}/tested`, { rateLimit: 1 });
        await sendRequests(t.url, token, 8);
        await eventually(async () => (await notificationsOf(limited._id)).filter((n) => n.nextAttemptAt !== null && Date.parse(n.nextAttemptAt) > Date.now() + 3_000).length > 0, 10_000, 'a backlog');
        const sentAt = Date.now();
        const sent = await api(t.url, 'POST', `/v2/subscriptions/${limited._id}/test`, { token });
        assert.equal(sent.status, 202);
        const log = await eventually(
          async () => {
            const detail = (await api(t.url, 'GET', `/v2/notifications/${sent.body.notificationId}`, { token })).body;
            return detail.status !== 'pending' && detail;
          },
          10_000,
          'the test send',
        );
        assert.equal(log.status, 'succeeded');
        assert.equal(log.attemptCount, 1);
        assert.ok(Date.parse(log.completedAt) - sentAt < 1_000, `answered in ${Date.parse(log.completedAt) - sentAt} ms`);
        const waitingStill = (await notificationsOf(limited._id)).filter((n) => !n.test && n.status === 'pending');
        assert.ok(waitingStill.length >= 3, `the backlog still waits its turns: ${waitingStill.length} pending`);
      } finally {
        await worker.stop();
        await receiver.close();
      }
    });

    it('the shared window: turns add up within a second, a new second starts over, a worker whose clock is behind counts into the newer window', async () => {
      await tenant();
      const a = await subscribe('http://127.0.0.1:9/a', { rateLimit: 5 });
      const b = await subscribe('http://127.0.0.1:9/b', { rateLimit: 5 });
      const count = (windowStart: number, counts: Record<string, number>) => countRateWindowTurns(t.deps.db, windowStart, new Map(Object.entries(counts)));
      assert.deepEqual(
        await count(10_000, { [a._id]: 3, [b._id]: 1 }),
        new Map([
          [a._id, { windowStart: 10_000, granted: 3 }],
          [b._id, { windowStart: 10_000, granted: 1 }],
        ]),
      );
      assert.deepEqual(await count(10_000, { [a._id]: 2 }), new Map([[a._id, { windowStart: 10_000, granted: 5 }]]));
      assert.deepEqual(await count(11_000, { [a._id]: 4 }), new Map([[a._id, { windowStart: 11_000, granted: 4 }]]));
      assert.deepEqual(await count(10_000, { [a._id]: 1 }), new Map([[a._id, { windowStart: 11_000, granted: 5 }]]), 'behind: counted into the newer window');
      assert.deepEqual(await count(10_000, { sub_gone: 1 }), new Map(), 'a deleted subscription gets no row');
    });
  });
}
