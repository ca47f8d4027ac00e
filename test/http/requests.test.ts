// needs: database
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { RequestOutcome } from '../../src/domain/requests/outcomes.js';
import type { JobWorker } from '../../src/worker/job-worker.js';
import { startWorker } from '../../src/worker/start-worker.js';
import { testDialects } from '../support/databases.js';
import { insertExperience, prizeStock } from '../support/experiences.js';
import { api, startTestApp, type ClientCredentials, type TestApp } from '../support/test-app.js';

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

for (const dialect of testDialects()) {
  describe(`reward requests: received → registered → processed [${dialect}]`, () => {
    let t: TestApp;
    let worker: JobWorker;
    let client: ClientCredentials;
    let token: string;
    const outcomes: RequestOutcome[] = [];
    const post = (body: unknown, headers: Record<string, string> = {}) => api(t.url, 'POST', '/v2/requests', { token, body, headers });
    const get = (id: string) => api(t.url, 'GET', `/v2/requests/${id}`, { token });

    before(async () => {
      t = await startTestApp(dialect);
      // Manual worker: each test decides when jobs run, so intermediate states are observable.
      worker = startWorker(t.deps, {
        autoStart: false,
        recordOutcome: async (tx, batch) => {
          assert.equal(tx.isTransaction, true, 'the hook runs inside the state change transaction');
          outcomes.push(...batch);
        },
      });
      client = await t.createClientAccount();
      token = await t.token(client);
    });
    after(async () => {
      await worker.stop();
      await t.close();
    });

    it('stores the request, answers 202 {id, status} with Location, then registers and processes it with the seed fields', async () => {
      const experience = await insertExperience(t.deps.db, client.accountId, {
        events: ['purchase'],
        prizes: [
          { id: 'cpn-10', bucket: 'coupons', kind: 'coupon', value: 10.4, quantity: 2, stock: 5, description: 'R$10 coupon' },
          { id: 'pix-5', bucket: 'cashback', kind: 'payment', value: 5, quantity: 1, description: 'cashback' },
          { id: 'mug', bucket: 'merch', kind: 'physical', value: 0, quantity: 1, stock: 1, description: 'a mug' },
        ],
      });
      const created = await post({ experience: experience.name, event: 'purchase', data: { orderId: 'o-1', total: 99.9 } });
      assert.equal(created.status, 202);
      assert.deepEqual(Object.keys(created.body).sort(), ['id', 'status']);
      assert.equal(created.body.status, 'received');
      assert.match(created.body.id, /^req_[0-9a-z]{26}$/);
      assert.equal(created.headers.get('location'), `${t.config.publicUrl}/v2/requests/${created.body.id}`);
      const id = created.body.id as string;

      const received = await get(id);
      assert.equal(received.status, 200);
      assert.equal(received.body.status, 'received');
      assert.equal(received.body.experience, experience.name);
      assert.deepEqual(received.body.data, { orderId: 'o-1', total: 99.9 });
      assert.match(received.body.createdAt, ISO_UTC);
      assert.equal(received.body.rewardValue, undefined);

      // One pass registers (and the registration enqueues processing, which the same drain runs).
      await worker.runUntilIdle();
      const processed = await get(id);
      assert.equal(processed.body.status, 'processed');
      // Σ value × quantity = 10.4×2 + 5 + 0 = 25.8 → 26 at registration; all delivered, so 26 again.
      assert.equal(processed.body.rewardValue, 26);
      assert.match(processed.body.concluded, ISO_UTC);
      assert.match(processed.body.registeredAt, ISO_UTC);
      assert.equal(processed.body.canceled.length, 0);
      assert.equal(processed.body.delivered.length, 3);
      const [coupon, payment, mug] = processed.body.delivered;
      assert.deepEqual(Object.keys(coupon).sort(), ['deliveryDetail', 'name', 'quantity', 'title', 'value']);
      assert.deepEqual(Object.keys(coupon.deliveryDetail).sort(), ['forwarded', 'info', 'timestamp']);
      assert.deepEqual(Object.keys(coupon.deliveryDetail.info).sort(), ['bucket', 'coupon', 'description', 'name', 'paymentId', 'requestId', 'rewardId', 'triggerId']);
      assert.deepEqual(
        { ...coupon, deliveryDetail: { ...coupon.deliveryDetail, info: { ...coupon.deliveryDetail.info, coupon: '<code>' } } },
        {
          value: 10.4,
          quantity: 2,
          name: experience.name,
          title: experience.title,
          deliveryDetail: {
            timestamp: processed.body.concluded,
            forwarded: false,
            info: { name: 'delivered', bucket: 'coupons', coupon: '<code>', paymentId: '', requestId: id, triggerId: 'purchase', rewardId: 'cpn-10', description: 'R$10 coupon' },
          },
        },
      );
      assert.match(coupon.deliveryDetail.info.coupon, /^[2-9A-Z]{4}-[2-9A-Z]{4}-[2-9A-Z]{4}$/);
      assert.match(payment.deliveryDetail.info.paymentId, /^pay_/);
      assert.equal(payment.deliveryDetail.info.coupon, '');
      assert.equal(mug.deliveryDetail.forwarded, true, 'physical prizes go to a delivery partner');
      assert.equal(mug.deliveryDetail.info.coupon + mug.deliveryDetail.info.paymentId, '');
      assert.equal(await prizeStock(t.deps.db, experience.id, 'cpn-10'), 4);
      assert.equal(await prizeStock(t.deps.db, experience.id, 'mug'), 0);
      assert.equal(await prizeStock(t.deps.db, experience.id, 'pix-5'), null);

      // The hook saw both state changes with exactly the seed's notification bodies.
      const mine = outcomes.filter((o) => o.request.id === id);
      assert.deepEqual(
        mine.map((o) => o.kind),
        ['registered', 'processed'],
      );
      assert.deepEqual(mine[0]!.payload, { id, rewardValue: 26 });
      assert.deepEqual(mine[1]!.payload, { id, rewardValue: 26, concluded: processed.body.concluded, delivered: processed.body.delivered, canceled: [] });

      const events = await api(t.url, 'GET', `/v2/request/${id}/events`, { token });
      assert.equal(events.status, 200);
      assert.deepEqual(
        events.body.map((e: any) => [e.name, e.refId]),
        [
          ['pedido-registrado', id],
          ['pedido-processado', id],
          ['pedido-entregue', coupon.deliveryDetail.info.coupon],
          ['pedido-entregue', payment.deliveryDetail.info.paymentId],
        ],
      );
      for (const event of events.body) {
        assert.equal(event.experience, experience.name);
        assert.equal(typeof event.title, 'string');
        assert.match(event.date, ISO_UTC);
      }
    });

    it('an out-of-stock prize becomes a canceled item and leaves the reward value', async () => {
      const experience = await insertExperience(t.deps.db, client.accountId, {
        prizes: [
          { id: 'gift', kind: 'coupon', value: 30, stock: 0, description: 'gift card' },
          { id: 'sticker', kind: 'physical', value: 0, stock: 0, description: 'sticker' },
          { id: 'points', kind: 'payment', value: 7, stock: 3 },
        ],
      });
      const { body } = await post({ experience: experience.name });
      await worker.runUntilIdle();
      const processed = (await get(body.id)).body;
      assert.equal(processed.status, 'processed');
      assert.equal(processed.rewardValue, 7, 'only delivered prizes count after processing');
      assert.equal(processed.delivered.length, 1);
      assert.equal(processed.delivered[0].deliveryDetail.info.triggerId, '', 'no event → empty triggerId');
      assert.deepEqual(processed.canceled, [
        {
          value: 30,
          quantity: 1,
          priceless: false,
          name: experience.name,
          title: experience.title,
          deliveryDetail: { timestamp: processed.concluded, forwarded: false, info: { name: 'canceled', reason: 'out of stock', reasonCode: 1, description: 'gift card', paymentId: '' } },
        },
        {
          value: 0,
          quantity: 1,
          priceless: true,
          name: experience.name,
          title: experience.title,
          deliveryDetail: { timestamp: processed.concluded, forwarded: false, info: { name: 'canceled', reason: 'out of stock', reasonCode: 1, description: 'sticker', paymentId: '' } },
        },
      ]);
    });

    it('an experience without prizes registers with no rewardValue and processes with empty lists', async () => {
      const experience = await insertExperience(t.deps.db, client.accountId, { prizes: [] });
      const { body } = await post({ experience: experience.name });
      await worker.runUntilIdle();
      const processed = (await get(body.id)).body;
      assert.equal(processed.status, 'processed');
      assert.equal('rewardValue' in processed, false);
      assert.deepEqual([processed.delivered, processed.canceled], [[], []]);
      assert.deepEqual(outcomes.find((o) => o.request.id === body.id && o.kind === 'registered')!.payload, { id: body.id });
    });

    const rejections: Array<[string, (name: string) => unknown]> = [
      ['EXPERIENCE_NOT_FOUND', () => ({ experience: 'no-such-campaign' })],
      ['EXPERIENCE_INACTIVE', (name) => ({ experience: name })],
      ['EVENT_NOT_ALLOWED', (name) => ({ experience: name, event: 'refund' })],
      ['INVALID_DATA', (name) => ({ experience: name, event: 'purchase', data: ['not', 'an', 'object'] })],
    ];
    for (const [code, body] of rejections) {
      it(`rejects with ${code}: status, errorCode, message, event, hook, never processed`, async () => {
        const experience = await insertExperience(t.deps.db, client.accountId, {
          active: code !== 'EXPERIENCE_INACTIVE',
          events: ['purchase'],
          prizes: [{ id: 'p', stock: 1 }],
        });
        const created = await post(body(experience.name));
        assert.equal(created.status, 202);
        await worker.runUntilIdle();
        const rejected = (await get(created.body.id)).body;
        assert.equal(rejected.status, 'rejected');
        assert.equal(rejected.errorCode, code);
        assert.equal(typeof rejected.message, 'string');
        assert.ok(rejected.message.length > 0);
        assert.equal(rejected.delivered, undefined);
        assert.equal(await prizeStock(t.deps.db, experience.id, 'p'), 1, 'a rejected request takes no stock');
        const outcome = outcomes.find((o) => o.request.id === created.body.id)!;
        assert.equal(outcome.kind, 'rejected');
        assert.deepEqual(outcome.payload, { id: created.body.id, errorCode: code, message: rejected.message });
        const events = (await api(t.url, 'GET', `/v2/request/${created.body.id}/events`, { token })).body;
        assert.deepEqual(
          events.map((e: any) => e.name),
          ['pedido-recusado'],
        );
        assert.deepEqual(events[0].data, { errorCode: code, message: rejected.message });
      });
    }

    it('an experience that lists events requires one: a request without event is EVENT_NOT_ALLOWED', async () => {
      const experience = await insertExperience(t.deps.db, client.accountId, { events: ['purchase'] });
      const created = await post({ experience: experience.name });
      await worker.runUntilIdle();
      assert.equal((await get(created.body.id)).body.errorCode, 'EVENT_NOT_ALLOWED');
    });

    it('a failing outcome hook rolls the state change back; the job is retried, never half-applied', async () => {
      const experience = await insertExperience(t.deps.db, client.accountId, { prizes: [{ id: 'p', stock: 2 }] });
      const failing = startWorker(t.deps, {
        autoStart: false,
        recordOutcome: async (_tx, batch) => {
          if (batch.some((outcome) => outcome.kind === 'processed')) throw new Error('notification store unavailable');
        },
      });
      const created = await post({ experience: experience.name });
      await failing.runUntilIdle();
      await failing.stop();
      const stuck = (await get(created.body.id)).body;
      assert.equal(stuck.status, 'registered', 'processing rolled back with its hook');
      assert.equal(await prizeStock(t.deps.db, experience.id, 'p'), 2, 'the stock taken in the failed transaction was given back');
      const job = await t.deps.db.selectFrom('jobs').selectAll().where('payload', 'like', `%${created.body.id}%`).executeTakeFirstOrThrow();
      assert.equal(job.kind, 'process-request');
      assert.equal(job.attempts, 1);
      assert.match(job.last_error!, /notification store unavailable/);
      // Due again later; make it due now and let the healthy worker finish it exactly once.
      await t.deps.db.updateTable('jobs').set({ run_at: 0 }).where('id', '=', job.id).execute();
      await worker.runUntilIdle();
      assert.equal((await get(created.body.id)).body.status, 'processed');
      assert.equal(await prizeStock(t.deps.db, experience.id, 'p'), 1);
    });
  });
}
