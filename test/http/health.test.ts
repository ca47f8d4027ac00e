// needs: database
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { testDialects } from '../support/databases.js';
import { api, startTestApp, type TestApp } from '../support/test-app.js';

for (const dialect of testDialects()) {
  describe(`health, docs and errors [${dialect}]`, () => {
    let t: TestApp;
    before(async () => {
      t = await startTestApp(dialect);
    });
    after(() => t.close());

    it('live and ready answer ok; ready has checked the database', async () => {
      assert.deepEqual((await api(t.url, 'GET', '/health/live')).body, { status: 'ok' });
      assert.deepEqual((await api(t.url, 'GET', '/health/ready')).body, { status: 'ok' });
    });

    it('live answers 503 with the reason while a watched part is stuck past LIVENESS_TIMEOUT, and 200 once it moves on', async () => {
      const stopWatching = t.deps.liveness.watch('a test step', () => Date.now() - 10 * 60_000);
      try {
        const stuck = await api(t.url, 'GET', '/health/live');
        assert.equal(stuck.status, 503);
        assert.match(stuck.body.detail, /^not live: a test step has been at one step for 600 s, past LIVENESS_TIMEOUT \(120 s\)$/);
      } finally {
        stopWatching();
      }
      assert.deepEqual((await api(t.url, 'GET', '/health/live')).body, { status: 'ok' });
    });

    it('serves an OpenAPI 3.1 document built from the route schemas, and the interactive docs', async () => {
      const doc = await api(t.url, 'GET', '/openapi.json');
      assert.equal(doc.status, 200);
      assert.equal(doc.body.openapi, '3.1.0');
      assert.ok(doc.body.paths['/v2/oauth/token'].post);
      assert.ok(doc.body.paths['/v1/oauth/token'].post);
      assert.ok(doc.body.paths['/v2/me'].get);
      const ui = await fetch(`${t.url}/docs/`);
      assert.equal(ui.status, 200);
      assert.match(await ui.text(), /swagger/i);
      const csp = ui.headers.get('content-security-policy') ?? '';
      assert.match(csp, /default-src 'self'/);
      assert.match(csp, /object-src 'none'/);
      assert.doesNotMatch(csp, /script-src[^;]*'unsafe-inline'/);
    });

    it('an unknown route is a problem+json 404 and echoes the request id', async () => {
      const response = await api(t.url, 'GET', '/v2/nothing-here', { headers: { 'x-request-id': 'abc-123' } });
      assert.equal(response.status, 404);
      assert.equal(response.headers.get('content-type'), 'application/problem+json; charset=utf-8');
      assert.equal(response.headers.get('x-request-id'), 'abc-123');
      assert.equal(response.body.status, 404);
      assert.equal(response.body.title, 'Not Found');
    });
  });
}
