// needs: database
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { startWorker } from '../src/worker/start-worker.js';
import type { JobWorker } from '../src/worker/job-worker.js';
import { testDialects } from './support/databases.js';
import { startTestApp, type TestApp } from './support/test-app.js';

/** The integrator's example (examples/receive-a-webhook.ts) runs, unchanged, against the real service. */
const EXAMPLE = fileURLToPath(new URL('../examples/receive-a-webhook.ts', import.meta.url));

/** Runs the example; `afterSuccessMs`: from its last line ("signature verified") to its exit. */
function run(env: Record<string, string>): Promise<{ code: number | null; output: string; afterSuccessMs: number | undefined }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', EXAMPLE], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    let succeededAt: number | undefined;
    child.stdout.on('data', (chunk) => {
      output += chunk;
      if (succeededAt === undefined && output.includes('signature verified')) succeededAt = performance.now();
    });
    child.stderr.on('data', (chunk) => (output += chunk));
    child.on('exit', (code) => resolve({ code, output, afterSuccessMs: succeededAt === undefined ? undefined : performance.now() - succeededAt }));
  });
}

/** Time left for the cleanup (one DELETE) and the exit after the verified call; the example's wait for it is 15 s. */
const PROMPT_EXIT_MS = 5_000;

for (const dialect of testDialects()) {
  describe(`examples/receive-a-webhook.ts against the service [${dialect}]`, () => {
    let t: TestApp;
    let worker: JobWorker;
    before(async () => {
      t = await startTestApp(dialect);
      worker = startWorker(t.deps, { pollIntervalMs: 25 });
    });
    after(async () => {
      await worker.stop();
      await t.close();
    });

    it('gets a token, subscribes, receives a test send and verifies its signature, cleans up, and exits promptly', async () => {
      const client = await t.createClientAccount();
      const { code, output, afterSuccessMs } = await run({ REWARDS_URL: t.url, CLIENT_ID: client.clientId, CLIENT_SECRET: client.clientSecret });
      assert.equal(code, 0, output);
      assert.match(output, /signature verified: request req_test_\w+/);
      // It exits once done: no timer (such as its 15 s wait for the call) keeps it alive after success.
      assert.ok(afterSuccessMs !== undefined && afterSuccessMs < PROMPT_EXIT_MS, `exited ${Math.round(afterSuccessMs ?? NaN)} ms after its success line (at most ${PROMPT_EXIT_MS})`);
      const left = await t.deps.db.selectFrom('subscriptions').select('id').where('account_id', '=', client.accountId).execute();
      assert.deepEqual(left, [], 'the example deleted its subscription');
    });

    it('fails when the credentials are wrong (it does not pass by accident)', async () => {
      const client = await t.createClientAccount();
      const { code, output } = await run({ REWARDS_URL: t.url, CLIENT_ID: client.clientId, CLIENT_SECRET: 'wrong' });
      assert.notEqual(code, 0);
      assert.match(output, /token: HTTP 401/);
    });
  });
}
