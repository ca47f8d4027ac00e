// needs: database
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { WebhookVerificationError } from 'standardwebhooks';
import { startWorker } from '../../src/worker/start-worker.js';
import type { JobWorker } from '../../src/worker/job-worker.js';
import { testDialects } from '../support/databases.js';
import { insertExperience } from '../support/experiences.js';
import { eventually, verifyWebhook } from '../support/notifications.js';
import { startHttpReceiver, type Receiver, type RecordedRequest } from '../support/receivers.js';
import { api, startTestApp, type ClientCredentials, type TestApp } from '../support/test-app.js';

const HOUR = 3_600_000;

/**
 * The service's clock: it stands still unless a test moves it, so what a worker cached at one
 * instant is still cached at the next. It starts two hours behind the real time and never passes
 * it: the delivery loop takes a job when it is due by the real time, so a delivery scheduled by
 * this clock is always due at once.
 */
function standingClock() {
  let at = Date.now() - 2 * HOUR;
  return {
    now: () => at,
    advance: (ms: number) => {
      at += ms;
      assert.ok(at <= Date.now(), 'the service clock stays behind the real time');
    },
  };
}

/**
 * A signing-secret rotation's `overlap`, seen by a real receiver verifying with the official
 * standardwebhooks package: while the replaced secret still signs, a call carries one signature per
 * secret and either secret verifies it; once it has stopped (at once with `0m`), one signature,
 * which only the new secret verifies. The service's clock is moved; the call's webhook-timestamp is
 * the real time, so the receiver's replay window is the library's own.
 */
for (const dialect of testDialects()) {
  describe(`signing-secret rotation overlap at the receiver [${dialect}]`, () => {
    const clock = standingClock();
    let t: TestApp;
    let worker: JobWorker;
    let receiver: Receiver;
    let client: ClientCredentials;

    before(async () => {
      t = await startTestApp(dialect, { RETRY_INTERVAL: '50ms', RETRY_MAX_ATTEMPTS: '1' }, { clock: clock.now });
      worker = startWorker(t.deps, { pollIntervalMs: 25 });
      receiver = await startHttpReceiver();
      client = await t.createClientAccount();
      await insertExperience(t.deps.db, client.accountId, { name: 'summer', prizes: [{ value: 5 }] });
    });
    after(async () => {
      await worker.stop();
      await receiver.close();
      await t.close();
    });

    // A token issued now, by the service's clock (one issued before a move of an hour may have expired).
    const token = () => t.token(client);
    const signatures = (call: RecordedRequest) => String(call.headers['webhook-signature']).split(' ');
    const verifies = (secret: string, call: RecordedRequest) => {
      try {
        verifyWebhook(secret, call);
        return true;
      } catch (error) {
        assert.ok(error instanceof WebhookVerificationError, String(error));
        assert.equal(error.message, 'No matching signature found');
        return false;
      }
    };

    const subscribe = async (path: string) => {
      const created = await api(t.url, 'POST', '/v2/subscriptions', { token: await token(), body: { event: 'registered-requests', callback: { url: `${receiver.url}${path}` } } });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      return created.body as { _id: string; secret: string };
    };
    /** A test send of the subscription, as the receiver got it. */
    const testCall = async (subscriptionId: string) => {
      const sent = await api(t.url, 'POST', `/v2/subscriptions/${subscriptionId}/test`, { token: await token() });
      assert.equal(sent.status, 202, JSON.stringify(sent.body));
      return eventually(() => receiver.requests.find((r) => r.headers['webhook-id'] === sent.body.notificationId), 15_000, 'the test send');
    };
    const rotate = async (path: string, overlap: string) => {
      const rotated = await api(t.url, 'POST', path, { token: await token(), body: { overlap } });
      assert.equal(rotated.status, 200, JSON.stringify(rotated.body));
      return rotated.body as { secret: string; createdAt: string; previousSecretExpiresAt: string };
    };

    it('overlap 0m: the next call carries one signature, the new secret’s', async () => {
      const sub = await subscribe('/now');
      const rotated = await rotate(`/v2/subscriptions/${sub._id}/secret/rotate`, '0m');
      assert.equal(rotated.previousSecretExpiresAt, rotated.createdAt);
      const call = await testCall(sub._id);
      assert.equal(signatures(call).length, 1);
      assert.equal(verifies(rotated.secret, call), true);
      assert.equal(verifies(sub.secret, call), false);
    });

    it('overlap 0m after deliveries signed with the old secret: a rotation reaches the worker within a second', async () => {
      const sub = await subscribe('/now-after-use');
      const before = await testCall(sub._id);
      assert.equal(verifies(sub.secret, before), true);
      const rotated = await rotate(`/v2/subscriptions/${sub._id}/secret/rotate`, '0m');
      clock.advance(1_000); // the worker keeps an owner's secrets for a second (deliver-notification.ts)
      const call = await testCall(sub._id);
      assert.deepEqual([signatures(call).length, verifies(rotated.secret, call), verifies(sub.secret, call)], [1, true, false]);
    });

    it('overlap 1h: two signatures, either secret verifies, until the hour has passed; then one', async () => {
      const sub = await subscribe('/hour');
      const rotated = await rotate(`/v2/subscriptions/${sub._id}/secret/rotate`, '1h');
      assert.equal(Date.parse(rotated.previousSecretExpiresAt), Date.parse(rotated.createdAt) + HOUR);
      const rotatedAt = Date.parse(rotated.createdAt);

      const first = await testCall(sub._id);
      assert.deepEqual([signatures(first).length, verifies(rotated.secret, first), verifies(sub.secret, first)], [2, true, true]);

      // The last millisecond of the hour: both still sign. The worker now holds both in its cache…
      clock.advance(rotatedAt + HOUR - 1 - clock.now());
      const late = await testCall(sub._id);
      assert.deepEqual([signatures(late).length, verifies(rotated.secret, late), verifies(sub.secret, late)], [2, true, true]);

      // …and the next millisecond, with the cache still fresh, the replaced one no longer signs.
      clock.advance(1);
      const after = await testCall(sub._id);
      assert.deepEqual([signatures(after).length, verifies(rotated.secret, after), verifies(sub.secret, after)], [1, true, false]);
    });

    it('the account default secret (per-request callback URLs) follows its rotation’s overlap too', async () => {
      const original = (await api(t.url, 'GET', '/v2/signing-secret', { token: await token() })).body.secret as string;
      let n = 0;
      const requestCall = async () => {
        n += 1;
        const path = `/own-${n}`;
        const sent = await api(t.url, 'POST', '/v2/requests', { token: await token(), body: { experience: 'summer', registeredCallbackUrl: `${receiver.url}${path}` } });
        assert.equal(sent.status, 202, JSON.stringify(sent.body));
        return eventually(() => receiver.requests.find((r) => r.path === path), 15_000, `the call to ${path}`);
      };
      const hour = await rotate('/v2/signing-secret/rotate', '1h');
      const during = await requestCall();
      assert.deepEqual([signatures(during).length, verifies(hour.secret, during), verifies(original, during)], [2, true, true]);

      const now = await rotate('/v2/signing-secret/rotate', '0m');
      clock.advance(1_000);
      const after = await requestCall();
      assert.deepEqual([signatures(after).length, verifies(now.secret, after), verifies(hour.secret, after), verifies(original, after)], [1, true, false, false]);
    });
  });
}
