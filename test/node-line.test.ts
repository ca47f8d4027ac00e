// needs: database, every-node-line
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { childEnvironment, runCli, startChildService } from './support/child-service.js';
import { testDialects } from './support/databases.js';
import { eventually, verifyWebhook } from './support/notifications.js';
import { startHttpReceiver, type Receiver } from './support/receivers.js';
import { api } from './support/test-app.js';

/**
 * The whole service as a user starts it, on the Node.js line running the tests (CI runs the suite
 * on 20, 22 and 24: scripts/with-node.sh). It guards what broke on Node 24, where the process
 * aborted a few seconds after start when the garbage collector freed a SQLite statement
 * (src/storage/sqlite-driver.ts), and it fails on any runtime warning the service prints.
 */
for (const dialect of testDialects()) {
  describe(`the real service on Node ${process.version} [${dialect}]`, () => {
    let child: Awaited<ReturnType<typeof childEnvironment>>;
    let receiver: Receiver;
    before(async () => {
      child = await childEnvironment(dialect);
      receiver = await startHttpReceiver();
    });
    after(async () => {
      await receiver.close();
      await child.cleanup();
    });

    it('starts, takes a reward request to its signed webhook through the outbound thread, stops on SIGTERM with exit 0, and warns of nothing', async () => {
      const env = { ...child.env, CALLBACK_ALLOW_PRIVATE_NETWORKS: 'true' };
      const cli = (args: string[]) => {
        const result = runCli(args, env);
        assert.equal(result.status, 0, `rewards ${args.join(' ')}: ${result.stderr}`);
        assert.doesNotMatch(result.stderr, /Warning/i, `rewards ${args.join(' ')} printed a warning`);
        return JSON.parse(result.stdout);
      };
      cli(['migrate']);
      const account = cli(['accounts', 'create', '--name', 'node-line']);
      const client = cli(['clients', 'create', '--account', account.id]);
      const file = join(child.dataDir, 'experiences.json');
      writeFileSync(file, JSON.stringify({ name: 'summer', title: 'Summer', prizes: [{ id: 'cpn', bucket: 'coupons', title: '10 off', value: 10, kind: 'coupon' }] }));
      cli(['experiences', 'import', file, '--account', account.id]);

      const service = await startChildService(env);
      try {
        const token = await fetch(`${service.url}/v2/oauth/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret, scope: client.scopes }),
        }).then(async (response) => ((await response.json()) as { access_token: string }).access_token);
        const subscription = await api(service.url, 'POST', '/v2/subscriptions', { token, body: { event: 'processed-requests', callback: { url: `${receiver.url}/processed` } } });
        assert.equal(subscription.status, 201, JSON.stringify(subscription.body));

        // Enough requests that statements are prepared, cached, evicted and collected meanwhile.
        const ids: string[] = [];
        for (let i = 0; i < 50; i++) {
          const created = await api(service.url, 'POST', '/v2/requests', { token, body: { experience: 'summer', event: 'purchase', data: { i } } });
          assert.equal(created.status, 202, JSON.stringify(created.body));
          ids.push(created.body.id);
        }
        await eventually(() => receiver.requests.length >= ids.length, 30_000, 'every processed-requests webhook');
        const delivered = receiver.requests.map((request) => verifyWebhook(subscription.body.secret, request));
        assert.deepEqual(delivered.map((body) => body.id).sort(), [...ids].sort());
        assert.ok(
          delivered.every((body) => Array.isArray(body.delivered) && body.delivered.length === 1),
          'each request delivered its coupon',
        );
      } finally {
        service.process.kill('SIGTERM');
      }
      assert.equal(await service.exited, 0, service.output());
      const output = service.output();
      // `(node:PID) …Warning`, and V8's `Error: unrecognized flag` for a flag of src/cli/v8-flags.ts this line lacks.
      assert.doesNotMatch(output, /\(node:\d+\)|Warning|unrecognized flag/i, 'the runtime printed a warning');
      assert.doesNotMatch(output, /"level":(40|50|60)/, 'the service logged a warning or an error');
    });
  });
}
