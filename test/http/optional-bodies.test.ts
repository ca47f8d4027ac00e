// needs: database
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { testDialects } from '../support/databases.js';
import { api, startTestApp, type TestApp } from '../support/test-app.js';

/**
 * A body the document calls optional (`requestBody.required: false`, from a route's
 * `config.optionalBody`) may really be left out: each such operation answers 2xx without a body,
 * and no other operation is marked so. A generated client that sends nothing must not get a 400.
 */
for (const dialect of testDialects()) {
  describe(`optional request bodies [${dialect}]`, () => {
    let t: TestApp;
    before(async () => {
      t = await startTestApp(dialect);
    });
    after(() => t.close());

    it('the document marks exactly the operations that take no body, and each answers 2xx without one', async () => {
      const document = (await api(t.url, 'GET', '/openapi.json')).body as { paths: Record<string, Record<string, { requestBody?: { required?: boolean } }>> };
      const optional = Object.entries(document.paths).flatMap(([path, operations]) =>
        Object.entries(operations).flatMap(([method, operation]) => (operation.requestBody && operation.requestBody.required === false ? [`${method.toUpperCase()} ${path}`] : [])),
      );
      const v2 = optional.filter((operation) => operation.includes(' /v2/')).sort();
      assert.deepEqual(v2, [
        'POST /v2/admin/accounts/{id}/clients',
        'POST /v2/admin/accounts/{id}/console-links',
        'POST /v2/signing-secret/rotate',
        'POST /v2/subscriptions/{subscriptionId}/secret/rotate',
      ]);
      assert.equal(optional.length, v2.length * 2, 'the /v1 copies too');

      const client = await t.createClientAccount();
      const token = await t.token(client);
      const operator = await t.token(t.operator);
      const subscription = (await api(t.url, 'POST', '/v2/subscriptions', { token, body: { event: 'registered-request', callback: { url: 'http://127.0.0.1:9/optional-body' } } })).body._id as string;
      const calls: Array<[string, string]> = [
        [`/v2/admin/accounts/${client.accountId}/clients`, operator],
        [`/v2/admin/accounts/${client.accountId}/console-links`, operator],
        ['/v2/signing-secret/rotate', token],
        [`/v2/subscriptions/${subscription}/secret/rotate`, token],
      ];
      for (const [path, bearer] of calls) {
        const response = await api(t.url, 'POST', path, { token: bearer });
        assert.ok(response.status >= 200 && response.status < 300, `${path} without a body: ${response.status} ${JSON.stringify(response.body)}`);
      }
    });
  });
}
