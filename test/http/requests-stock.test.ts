// needs: database
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { JobWorker } from '../../src/worker/job-worker.js';
import { startWorker } from '../../src/worker/start-worker.js';
import { testDialects } from '../support/databases.js';
import { insertExperience, prizeStock } from '../support/experiences.js';
import { waitForStatus } from '../support/requests.js';
import { api, startTestApp, type ClientCredentials, type TestApp } from '../support/test-app.js';

for (const dialect of testDialects()) {
  describe(`stock under concurrent requests [${dialect}]`, () => {
    let t: TestApp;
    const workers: JobWorker[] = [];
    let client: ClientCredentials;
    let token: string;

    before(async () => {
      t = await startTestApp(dialect);
      // Real background loops, woken by ingest; several workers compete for the same jobs.
      for (let i = 0; i < 3; i++) workers.push(startWorker(t.deps, { batchSize: 7, pollIntervalMs: 50 }));
      client = await t.createClientAccount();
      token = await t.token(client);
    });
    after(async () => {
      for (const worker of workers) await worker.stop();
      await t.close();
    });

    it('60 concurrent requests for 25 limited units: exactly 25 delivered, the rest canceled, stock 0, never negative', async () => {
      const experience = await insertExperience(t.deps.db, client.accountId, {
        prizes: [
          { id: 'limited', kind: 'coupon', value: 20, stock: 25, description: 'limited coupon' },
          { id: 'unlimited', kind: 'payment', value: 1 },
        ],
      });
      const created = await Promise.all(Array.from({ length: 60 }, () => api(t.url, 'POST', '/v2/requests', { token, body: { experience: experience.name } })));
      assert.ok(created.every((r) => r.status === 202));
      const done = await Promise.all(created.map((r) => waitForStatus(t.url, token, r.body.id, ['processed', 'failed'])));
      assert.ok(done.every((r) => r.status === 'processed'));

      const gotLimited = done.filter((r) => r.delivered.some((d: any) => d.deliveryDetail.info.rewardId === 'limited'));
      const lostLimited = done.filter((r) => r.canceled.length === 1);
      assert.equal(gotLimited.length, 25);
      assert.equal(lostLimited.length, 35);
      for (const r of lostLimited) {
        assert.equal(r.canceled[0].deliveryDetail.info.reasonCode, 1);
        assert.equal(r.rewardValue, 1, 'only the delivered unlimited prize counts');
      }
      for (const r of gotLimited) assert.equal(r.rewardValue, 21);
      assert.ok(done.every((r) => r.delivered.some((d: any) => d.deliveryDetail.info.rewardId === 'unlimited')));
      assert.equal(await prizeStock(t.deps.db, experience.id, 'limited'), 0);
      const coupons = gotLimited.map((r) => r.delivered.find((d: any) => d.deliveryDetail.info.rewardId === 'limited').deliveryDetail.info.coupon);
      assert.equal(new Set(coupons).size, 25, 'every coupon code is distinct');
      const leftover = await t.deps.db.selectFrom('jobs').select('id').execute();
      assert.deepEqual(leftover, [], 'every job completed and was removed');
    });
  });
}
