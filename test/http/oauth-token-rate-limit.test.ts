import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { FailureLimiter } from '../../src/domain/tokens/failure-limiter.js';
import { testDialects } from '../support/databases.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

describe('FailureLimiter', () => {
  it('refuses a key after `limit` failures until its window ends', () => {
    let now = 1_000_000;
    const limiter = new FailureLimiter(3, 60_000, () => now);
    for (let i = 0; i < 3; i++) {
      assert.equal(limiter.retryAfterSeconds('k'), 0);
      limiter.recordFailure('k');
    }
    assert.equal(limiter.retryAfterSeconds('k'), 60);
    assert.equal(limiter.retryAfterSeconds('other'), 0);
    now += 59_000;
    assert.equal(limiter.retryAfterSeconds('k'), 1);
    now += 1_000;
    assert.equal(limiter.retryAfterSeconds('k'), 0);
  });
});

for (const dialect of testDialects()) {
  describe(`token endpoint rate limits repeated authentication failures [${dialect}]`, () => {
    let t: TestApp;
    before(async () => {
      t = await startTestApp(dialect);
    });
    after(() => t.close());

    it('after 10 failures for a client id, even the right secret gets 429 with Retry-After', async () => {
      const client = await t.createClientAccount(undefined, ['requests:read']);
      const attempt = (secret: string) =>
        fetch(`${t.url}/v2/oauth/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ grant_type: 'client_credentials', client_id: client.clientId, client_secret: secret, scope: 'requests:read' }),
        });
      for (let i = 0; i < 10; i++) assert.equal((await attempt(`wrong-${i}`)).status, 401);
      const limited = await attempt(client.clientSecret);
      assert.equal(limited.status, 429);
      const retryAfter = Number(limited.headers.get('retry-after'));
      assert.ok(retryAfter > 0 && retryAfter <= 60, `Retry-After ${retryAfter}`);
      assert.equal(limited.headers.get('cache-control'), 'no-store');
      assert.equal(((await limited.json()) as { error: string }).error, 'temporarily_unavailable');
    });
  });
}
