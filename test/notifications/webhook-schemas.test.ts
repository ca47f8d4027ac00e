// needs: database
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { startWorker } from '../../src/worker/start-worker.js';
import type { JobWorker } from '../../src/worker/job-worker.js';
import { testDialects } from '../support/databases.js';
import { insertExperience } from '../support/experiences.js';
import { eventually } from '../support/notifications.js';
import { startHttpReceiver, type Receiver } from '../support/receivers.js';
import { api, startTestApp, type TestApp } from '../support/test-app.js';

const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule) as unknown as (ajv: Ajv2020) => Ajv2020;

/**
 * The `webhooks` of the served OpenAPI document describe exactly what is sent: every body a real
 * receiver gets (registered, rejected, processed with delivered and canceled prizes, test sends)
 * validates against the published schema of its event, whose objects are closed.
 */
for (const dialect of testDialects()) {
  describe(`the webhooks in the OpenAPI document [${dialect}]`, () => {
    let t: TestApp;
    let worker: JobWorker;
    let receiver: Receiver;
    before(async () => {
      t = await startTestApp(dialect);
      worker = startWorker(t.deps, { pollIntervalMs: 25 });
      receiver = await startHttpReceiver();
    });
    after(async () => {
      await worker.stop();
      await receiver.close();
      await t.close();
    });

    it('real bodies of every event validate against the published schemas; a drifted body does not', async () => {
      const doc = (await api(t.url, 'GET', '/openapi.json')).body;
      assert.deepEqual(Object.keys(doc.webhooks ?? {}).sort(), ['disabled-subscriptions', 'endpoint-circuits', 'failed-notifications', 'processed-requests', 'registered-requests']);
      const ajv = addFormats(new Ajv2020({ strict: false, allErrors: true }));
      // The payloads are named components (`$ref`s into the document): compiled where they stand in it.
      ajv.addSchema(doc, 'openapi.json');
      const validators = Object.fromEntries(
        Object.entries(doc.webhooks).map(([event, item]: [string, any]) => {
          const names = item.post.parameters.map((p: any) => p.name);
          for (const required of ['webhook-id', 'webhook-timestamp', 'webhook-signature', 'x-webhook-event', 'x-webhook-test']) assert.ok(names.includes(required), `${event}: ${required}`);
          return [event, ajv.compile({ $ref: `openapi.json#/webhooks/${event}/post/requestBody/content/application~1json/schema` })];
        }),
      );

      const client = await t.createClientAccount();
      const token = await t.token(client);
      await insertExperience(t.deps.db, client.accountId, {
        name: 'mixed',
        events: ['buy'],
        prizes: [
          { id: 'cpn', value: 10, kind: 'coupon', stock: null },
          { id: 'gone', value: 0, kind: 'physical', stock: 0 },
        ],
      });
      const subscriptions = [];
      // The operational events get test sends only here (their real bodies: operational-notifications.test.ts, circuit-breaker.test.ts).
      for (const event of ['registered-requests', 'processed-requests', 'failed-notifications', 'disabled-subscriptions', 'endpoint-circuits']) {
        subscriptions.push((await api(t.url, 'POST', '/v2/subscriptions', { token, body: { event, callback: { url: `${receiver.url}/${event}` } } })).body._id);
      }
      const accepted = await api(t.url, 'POST', '/v2/requests', { token, body: { experience: 'mixed', event: 'buy', data: { order: 1 } } });
      const rejected = await api(t.url, 'POST', '/v2/requests', { token, body: { experience: 'no-such-experience' } });
      assert.equal(accepted.status, 202);
      assert.equal(rejected.status, 202);
      for (const id of subscriptions) assert.equal((await api(t.url, 'POST', `/v2/subscriptions/${id}/test`, { token })).status, 202);

      await eventually(() => receiver.requests.length >= 8, 15_000, 'registered ×2, processed, five test sends');
      const seen = new Set<string>();
      for (const request of receiver.requests) {
        const event = String(request.headers['x-webhook-event']);
        const body = JSON.parse(request.body) as Record<string, any>;
        const validate = validators[event]!;
        assert.ok(validate(body), `${event} ${request.body}: ${JSON.stringify(validate.errors)}`);
        seen.add(`${event}${body.errorCode ? ' rejected' : ''}${request.headers['x-webhook-test'] ? ' test' : ''}`);
        if (event === 'processed-requests' && !request.headers['x-webhook-test']) {
          assert.equal(body.delivered.length, 1);
          assert.equal(body.canceled.length, 1);
        }
      }
      assert.deepEqual([...seen].sort(), [
        'disabled-subscriptions test',
        'endpoint-circuits test',
        'failed-notifications test',
        'processed-requests',
        'processed-requests test',
        'registered-requests',
        'registered-requests rejected',
        'registered-requests test',
      ]);

      // Closed objects: a member the schema does not name is refused, so drift is caught.
      const processed = JSON.parse(receiver.requests.find((r) => r.headers['x-webhook-event'] === 'processed-requests')!.body);
      assert.equal(validators['processed-requests']!({ ...processed, extra: 1 }), false);
      assert.equal(
        validators['processed-requests']!({
          ...processed,
          delivered: [{ ...processed.delivered[0], deliveryDetail: { ...processed.delivered[0].deliveryDetail, info: { ...processed.delivered[0].deliveryDetail.info, more: '' } } }],
        }),
        false,
      );
    });
  });
}
