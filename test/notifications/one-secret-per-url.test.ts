// needs: database
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { loadSigningSecrets, loadSigningSecretsForUrl } from '../../src/services/signing-secrets.js';
import { startWorker } from '../../src/worker/start-worker.js';
import type { JobWorker } from '../../src/worker/job-worker.js';
import { testDialects } from '../support/databases.js';
import { tenantWithExperience } from '../support/experiences.js';
import { eventually, verifyWebhook } from '../support/notifications.js';
import { startHttpReceiver, type Receiver, type RecordedRequest } from '../support/receivers.js';
import { api, startTestApp, type TestApp } from '../support/test-app.js';

/**
 * One secret per receiver URL (docs/subscriptions.md, "Signing secrets"): a receiver that takes both
 * events at one URL, from subscriptions and from per-request callback URLs, verifies every call
 * with the one secret it configured once, through rotations.
 */
for (const dialect of testDialects()) {
  describe(`one signing secret per receiver URL [${dialect}]`, () => {
    let t: TestApp;
    let worker: JobWorker;
    const receivers: Receiver[] = [];

    before(async () => {
      t = await startTestApp(dialect);
      worker = startWorker(t.deps, { pollIntervalMs: 25 });
    });
    after(async () => {
      await worker.stop();
      for (const receiver of receivers) await receiver.close();
      await t.close();
    });

    const tenant = async () => {
      const { token, client } = await tenantWithExperience(t, { prizes: [{ id: 'cpn', value: 10, stock: null }] });
      const subscribe = async (event: string, url: string) => {
        const created = await api(t.url, 'POST', '/v2/subscriptions', { token, body: { event, callback: { url } } });
        assert.equal(created.status, 201, JSON.stringify(created.body));
        return created.body as { _id: string; secret: string };
      };
      const send = async (body: Record<string, unknown> = {}) => {
        const response = await api(t.url, 'POST', '/v2/requests', { token, body: { experience: 'summer', ...body } });
        assert.equal(response.status, 202, JSON.stringify(response.body));
        return response.body.id as string;
      };
      const secretOf = async (subscriptionId: string) => (await api(t.url, 'GET', `/v2/subscriptions/${subscriptionId}/secret`, { token })).body.secret as string;
      return { token, accountId: client.accountId, subscribe, send, secretOf };
    };
    const receiver = async () => {
      const started = await startHttpReceiver(() => ({ status: 204 }));
      receivers.push(started);
      return started;
    };
    const callsOf = (r: Receiver, requestId: string) => r.requests.filter((call) => JSON.parse(call.body).id === requestId);
    const bothEvents = (r: Receiver, requestId: string) =>
      eventually(
        () => {
          const calls = callsOf(r, requestId);
          return calls.length === 2 && calls;
        },
        15_000,
        `both events of ${requestId}`,
      );
    const events = (calls: RecordedRequest[]) => calls.map((call) => String(call.headers['x-webhook-event'])).sort();

    it('both events at one URL, from subscriptions and per-request URLs, verify with the secret the first subscription showed', async () => {
      const { subscribe, send, secretOf } = await tenant();
      const r = await receiver();
      const url = `${r.url}/hooks`;
      const registered = await subscribe('registered-request', url);
      const processed = await subscribe('processed-request', url);
      assert.equal(processed.secret, registered.secret, 'the second subscription at the URL shows the same secret');
      assert.equal(await secretOf(processed._id), registered.secret);
      const secret = registered.secret;

      const bySubscriptions = await send();
      const perRequest = await send({ registeredCallbackUrl: url, processedCallbackUrl: url });
      for (const requestId of [bySubscriptions, perRequest]) {
        const calls = await bothEvents(r, requestId);
        assert.deepEqual(events(calls), ['processed-requests', 'registered-requests']);
        for (const call of calls) {
          assert.equal(verifyWebhook(secret, call).id, requestId);
          assert.equal(String(call.headers['webhook-signature']).split(' ').length, 1, 'one signature: copies of one secret sign once');
        }
      }
    });

    it('a per-request URL no subscription uses is signed with the account default secret', async () => {
      const { token, subscribe, send } = await tenant();
      const r = await receiver();
      const subscribed = await subscribe('registered-request', `${r.url}/subscribed`);
      const requestId = await send({ registeredCallbackUrl: `${r.url}/elsewhere` });
      const call = await eventually(() => callsOf(r, requestId).find((c) => c.path === '/elsewhere'), 15_000, 'the per-request call');
      const accountDefault = (await api(t.url, 'GET', '/v2/signing-secret', { token })).body.secret as string;
      assert.equal(verifyWebhook(accountDefault, call).id, requestId);
      assert.throws(() => verifyWebhook(subscribed.secret, call), 'not the subscription’s: another URL');
    });

    it('rotating from either subscription rotates the URL’s secret: both sign with the new one, the old one through the overlap', async () => {
      const { token, subscribe, send, secretOf } = await tenant();
      const r = await receiver();
      const url = `${r.url}/hooks`;
      const registered = await subscribe('registered-request', url);
      const processed = await subscribe('processed-request', url);
      const elsewhere = await subscribe('processed-request', `${r.url}/other`);

      const rotated = await api(t.url, 'POST', `/v2/subscriptions/${processed._id}/secret/rotate`, { token, body: { overlap: '1h' } });
      assert.equal(rotated.status, 200, JSON.stringify(rotated.body));
      const fresh = rotated.body.secret as string;
      assert.notEqual(fresh, registered.secret);
      assert.equal(await secretOf(registered._id), fresh, 'the other subscription at the URL has the new secret too');
      assert.equal(await secretOf(elsewhere._id), elsewhere.secret, 'a subscription at another URL keeps its own');

      const requestId = await send({ processedCallbackUrl: url });
      for (const call of await bothEvents(r, requestId)) {
        assert.equal(String(call.headers['webhook-signature']).split(' ').length, 2, 'the new secret and the one in its overlap');
        assert.equal(verifyWebhook(fresh, call).id, requestId);
        assert.equal(verifyWebhook(registered.secret, call).id, requestId);
      }
    });

    it('a subscription moved to a URL that has subscriptions takes their secret; moved to a new URL it keeps its own', async () => {
      const { token, subscribe, secretOf } = await tenant();
      const r = await receiver();
      const there = await subscribe('registered-request', `${r.url}/there`);
      const mover = await subscribe('processed-request', `${r.url}/before`);
      assert.notEqual(mover.secret, there.secret);

      const toNew = await api(t.url, 'PUT', `/v2/subscriptions/${mover._id}`, { token, body: { callback: { url: `${r.url}/new` } } });
      assert.equal(toNew.status, 200, JSON.stringify(toNew.body));
      assert.equal(await secretOf(mover._id), mover.secret);

      const toShared = await api(t.url, 'PUT', `/v2/subscriptions/${mover._id}`, { token, body: { callback: { url: `${r.url}/there` } } });
      assert.equal(toShared.status, 200, JSON.stringify(toShared.body));
      assert.equal(await secretOf(mover._id), there.secret);
      const rows = await t.deps.db.selectFrom('webhook_signing_secrets').select('id').where('subscription_id', '=', mover._id).execute();
      assert.equal(rows.length, 1, 'its own secret is gone');
    });

    it('subscriptions written with different secrets at one URL (before secrets were shared): every one signs until a rotation makes them one', async () => {
      const { token, accountId, subscribe } = await tenant();
      const r = await receiver();
      const url = `${r.url}/legacy`;
      const first = await subscribe('registered-request', url);
      const second = await subscribe('processed-request', `${r.url}/was-elsewhere`);
      // As an upgraded database holds them: same URL, each its own secret.
      await t.deps.db.updateTable('subscriptions').set({ callback_url: url }).where('id', '=', second._id).execute();
      const now = Date.now();
      const signing = await loadSigningSecretsForUrl(t.deps.db, t.deps.box, accountId, url, now);
      assert.deepEqual(
        signing.map((s) => s.secret),
        [first.secret, second.secret],
      );

      const rotated = await api(t.url, 'POST', `/v2/subscriptions/${first._id}/secret/rotate`, { token, body: { overlap: '0m' } });
      assert.equal(rotated.status, 200);
      const after = Date.parse(rotated.body.createdAt) + 1;
      for (const id of [first._id, second._id]) {
        assert.deepEqual(
          (await loadSigningSecrets(t.deps.db, t.deps.box, { subscriptionId: id }, after)).map((s) => s.secret),
          [rotated.body.secret],
        );
      }
      assert.deepEqual(
        (await loadSigningSecretsForUrl(t.deps.db, t.deps.box, accountId, url, after)).map((s) => s.secret),
        [rotated.body.secret],
      );
    });

    it('another account’s subscriptions at the same URL neither share nor lend their secret', async () => {
      const mine = await tenant();
      const theirs = await tenant();
      const r = await receiver();
      const url = `${r.url}/shared-host`;
      const a = await mine.subscribe('registered-request', url);
      const b = await theirs.subscribe('registered-request', url);
      assert.notEqual(a.secret, b.secret);
      const requestId = await theirs.send({ processedCallbackUrl: url });
      const processedCall = await eventually(() => callsOf(r, requestId).find((c) => c.headers['x-webhook-event'] === 'processed-requests'), 15_000, 'processed');
      assert.equal(verifyWebhook(b.secret, processedCall).id, requestId);
      assert.throws(() => verifyWebhook(a.secret, processedCall));
    });
  });
}
