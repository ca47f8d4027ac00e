// needs: database
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { SCOPES } from '../../src/domain/tokens/scopes.js';
import { testDialects } from '../support/databases.js';
import { api, startTestApp, type TestApp } from '../support/test-app.js';

/**
 * GET /delivery-policy tells a client how its notifications are delivered: what the operator
 * configured (RETRY_MAX_ATTEMPTS, RETRY_INTERVAL, CALLBACK_TIMEOUT, SUBSCRIPTION_DISABLE_AFTER)
 * and the fixed rules (jitter, Retry-After, test sends). The apps here start with values that are
 * not the defaults, so an answer that ignored the configuration would fail.
 */

const CONFIGURED = {
  RETRY_MAX_ATTEMPTS: '7',
  RETRY_INTERVAL: '90s',
  CALLBACK_TIMEOUT: '2500ms',
  SUBSCRIPTION_DISABLE_AFTER: '36h',
  CIRCUIT_BREAKER_FAILURES: '4',
  CIRCUIT_BREAKER_PROBE_INTERVAL: '5s',
  CIRCUIT_BREAKER_PROBE_MAX_INTERVAL: '2m',
  OUTBOUND_SOURCE_ADDRESSES: '203.0.113.7, 198.51.100.0/28',
  // Never shown: only the addresses receivers must admit are.
  OUTBOUND_PROXY: 'http://egress-user:egress-password@127.0.0.1:3128',
};

for (const dialect of testDialects()) {
  describe(`GET /delivery-policy [${dialect}]`, () => {
    let t: TestApp;
    let never: TestApp;

    before(async () => {
      t = await startTestApp(dialect, CONFIGURED);
      never = await startTestApp(dialect, { SUBSCRIPTION_DISABLE_AFTER: '0' });
    });
    after(async () => {
      await t.close();
      await never.close();
    });

    it('answers the policy the service was started with, under /v1 and /v2', async () => {
      const client = await t.createClientAccount('policy-reader');
      const token = await t.token(client);
      for (const version of ['v1', 'v2']) {
        const response = await api(t.url, 'GET', `/${version}/delivery-policy`, { token });
        assert.equal(response.status, 200, JSON.stringify(response.body));
        assert.deepEqual(response.body, {
          maxAttempts: 7,
          retryIntervalMs: 90_000,
          retryJitter: 0.2,
          retryAfterStatuses: [429, 503],
          retryAfterCapMs: 86_400_000,
          timeoutMs: 2_500,
          disableAfterMs: 36 * 3_600_000,
          testSendsPerMinute: 10,
          circuitBreaker: { failures: 4, probeIntervalMs: 5_000, probeMaxIntervalMs: 120_000 },
          sourceAddresses: ['203.0.113.7', '198.51.100.0/28'],
        });
        assert.ok(!/3128|egress-/.test(JSON.stringify(response.body)), 'the proxy itself is not shown');
      }
    });

    it('SUBSCRIPTION_DISABLE_AFTER=0 (never) is disableAfterMs: null; the rest are the defaults', async () => {
      const response = await api(never.url, 'GET', '/v2/delivery-policy', { token: await never.token(await never.createClientAccount('reader')) });
      assert.equal(response.status, 200);
      assert.equal(response.body.disableAfterMs, null);
      assert.equal(response.body.maxAttempts, 5);
      assert.equal(response.body.retryIntervalMs, 3 * 3_600_000);
      assert.equal(response.body.timeoutMs, 10_000);
      assert.equal(response.body.sourceAddresses, null, 'OUTBOUND_SOURCE_ADDRESSES unset');
      assert.equal(response.body.circuitBreaker, null, 'the tests run without the breaker unless they set it (test-database.ts)');
    });

    it('any valid token reads it, whatever its scope; no token is a 401', async () => {
      for (const scope of SCOPES) {
        const client = await t.createClientAccount(undefined, [scope]);
        const response = await api(t.url, 'GET', '/v2/delivery-policy', { token: await t.token(client, scope) });
        assert.equal(response.status, 200, `a token with only ${scope}`);
        assert.equal(response.body.maxAttempts, 7);
      }
      const anonymous = await api(t.url, 'GET', '/v2/delivery-policy');
      assert.equal(anonymous.status, 401);
    });

    it('the OpenAPI document describes every member of the answer', async () => {
      const document = await (await fetch(`${t.url}/openapi.json`)).json();
      const operation = document.paths['/v2/delivery-policy'].get;
      assert.equal(operation.operationId, 'getDeliveryPolicy');
      assert.equal(document.paths['/v1/delivery-policy'].get.operationId, 'getDeliveryPolicyV1');
      let schema = operation.responses['200'].content['application/json'].schema;
      if (schema.$ref) schema = document.components.schemas[schema.$ref.split('/').at(-1)];
      for (const [name, member] of Object.entries(schema.properties as Record<string, { description?: string }>)) {
        assert.ok(member.description, `${name} has no description`);
      }
      assert.deepEqual(Object.keys(schema.properties).sort(), [
        'circuitBreaker',
        'disableAfterMs',
        'maxAttempts',
        'retryAfterCapMs',
        'retryAfterStatuses',
        'retryIntervalMs',
        'retryJitter',
        'sourceAddresses',
        'testSendsPerMinute',
        'timeoutMs',
      ]);
    });
  });
}
