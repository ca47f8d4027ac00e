// needs: sqlite
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { childEnvironment, startChildService } from './support/child-service.js';

describe('a --role worker process with METRICS_PORT', () => {
  let env: Record<string, string>;
  let cleanup: () => Promise<void>;
  before(async () => {
    ({ env, cleanup } = await childEnvironment('sqlite'));
  });
  after(() => cleanup());

  it('serves /health/ready and /metrics (delivery counters included) but no API route', async () => {
    const worker = await startChildService({ ...env, METRICS_PORT: '0' }, ['--role', 'worker']);
    try {
      const base = worker.url;
      assert.equal((await fetch(`${base}/health/ready`)).status, 200);
      const metrics = await (await fetch(`${base}/metrics`)).text();
      assert.match(metrics, /# TYPE rewards_webhook_attempts_total counter/);
      assert.match(metrics, /# TYPE rewards_jobs_oldest_due_age_seconds gauge/);
      assert.equal((await fetch(`${base}/v2/oauth/token`, { method: 'POST' })).status, 404);
    } finally {
      worker.process.kill('SIGTERM');
    }
    assert.equal(await worker.exited, 0);
  });
});
