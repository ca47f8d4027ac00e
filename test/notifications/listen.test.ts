// needs: database
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { runCli } from '../../src/cli/program.js';
import { startWorker } from '../../src/worker/start-worker.js';
import type { JobWorker } from '../../src/worker/job-worker.js';
import { purgeExpired } from '../../src/worker/start-worker.js';
import { testDialects } from '../support/databases.js';
import { tenantWithExperience } from '../support/experiences.js';
import { eventually, verifyWebhook } from '../support/notifications.js';
import { startHttpReceiver, type Receiver } from '../support/receivers.js';
import { waitForStatus } from '../support/requests.js';
import { api, startTestApp, type TestApp } from '../support/test-app.js';

/**
 * `rewards listen` (docs/receiving-webhooks.md, "Webhooks on a laptop"): the real CLI as a child
 * process against a real app and worker forwards the account's webhooks to a local receiver,
 * signed as the real ones; the answers show in its output and in the delivery log.
 */
const BIN = join(import.meta.dirname, '..', '..', 'bin', 'rewards.js');

/** The real `rewards listen`, its output collected as it comes. */
function startListen(args: string[], env: Record<string, string>): { child: ChildProcess; out: () => string; err: () => string; exited: Promise<number | null> } {
  const child = spawn(process.execPath, [BIN, 'listen', ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, out: () => out, err: () => err, exited };
}

for (const dialect of testDialects()) {
  describe(`rewards listen [${dialect}]`, () => {
    let t: TestApp;
    let worker: JobWorker;
    const receivers: Receiver[] = [];
    const children: ChildProcess[] = [];

    before(async () => {
      t = await startTestApp(dialect);
      worker = startWorker(t.deps, { pollIntervalMs: 25 });
    });
    after(async () => {
      for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
      await worker.stop();
      for (const receiver of receivers) await receiver.close();
      await t.close();
    });

    const receiver = async () => {
      const started = await startHttpReceiver(() => ({ status: 204 }));
      receivers.push(started);
      return started;
    };
    const tenant = async () => {
      const { client, token } = await tenantWithExperience(t, { prizes: [{ id: 'cpn', value: 10, stock: null }] });
      const send = async () => {
        const sent = await api(t.url, 'POST', '/v2/requests', { token, body: { experience: 'summer', event: 'purchase' } });
        assert.equal(sent.status, 202, JSON.stringify(sent.body));
        return sent.body.id as string;
      };
      const log = async (requestId: string) => (await api(t.url, 'GET', `/v2/notifications?requestId=${requestId}`, { token })).body.data as any[];
      const copies = async (requestId: string) => (await log(requestId)).filter((n) => n.url.startsWith('listen:'));
      return { client, token, send, log, copies };
    };

    it('forwards both events signed as the real ones, prints each answer, logs it, and ends on Ctrl-C', async () => {
      const production = await receiver();
      const local = await receiver();
      const { client, token, send, log, copies } = await tenant();
      const subscribed = await api(t.url, 'POST', '/v2/subscriptions', { token, body: { event: 'registered-request', callback: { url: `${production.url}/hooks` } } });
      assert.equal(subscribed.status, 201);
      const defaultSecret = (await api(t.url, 'GET', '/v2/signing-secret', { token })).body.secret as string;

      const cli = startListen(['--forward-to', `${local.url}/hooks`, '--api-url', t.url], { REWARDS_CLIENT_ID: client.clientId, REWARDS_CLIENT_SECRET: client.clientSecret, LOG_LEVEL: 'silent' });
      children.push(cli.child);
      await eventually(() => cli.out().includes('Ready!'), 30_000, `Ready! (stderr: ${cli.err()})`);
      assert.match(cli.out(), new RegExp(`Ready! Forwarding events for account ${client.accountId} to ${local.url}/hooks \\(signing secret: `));
      assert.ok(cli.out().includes(`${subscribed.body.secret} of ${production.url}/hooks`), cli.out());
      assert.ok(cli.out().includes(`${defaultSecret} of the account's default secret`), cli.out());

      const requestId = await send();
      const forwarded = (event: string) => local.requests.find((r) => r.headers['x-webhook-event'] === event && JSON.parse(r.body).id === requestId);
      const registered = await eventually(() => forwarded('registered-requests'), 15_000, 'the forwarded registered-requests');
      const processed = await eventually(() => forwarded('processed-requests'), 15_000, 'the forwarded processed-requests');
      // Signed as the real calls: the registered event with the secret of the subscription it went to,
      // the processed one (no receiver) with the account's default secret.
      assert.equal(verifyWebhook(subscribed.body.secret, registered).id, requestId);
      assert.equal(verifyWebhook(defaultSecret, processed).id, requestId);
      assert.equal(registered.path, '/hooks');
      assert.equal(registered.headers['content-type'], 'application/json');
      assert.match(String(registered.headers['user-agent']), /RewardRequestService/);
      // The real registered-requests went to production too, with the same body.
      const real = await eventually(() => production.requests.find((r) => JSON.parse(r.body).id === requestId), 15_000, 'the real call');
      assert.equal(real.body, registered.body);
      assert.notEqual(real.headers['webhook-id'], registered.headers['webhook-id']);

      // The CLI printed a line per call, and the delivery log shows each copy with its answer.
      await eventually(() => cli.out().includes(`processed-requests ${String(processed.headers['webhook-id'])} → 204 (`), 15_000, 'the printed lines');
      assert.match(cli.out(), new RegExp(`\\d{4}-\\d\\d-\\d\\dT\\S+ registered-requests ${String(registered.headers['webhook-id'])} → 204 \\(\\d+ ms\\)`));
      const logged = await eventually(
        async () => {
          const found = await copies(requestId);
          return found.length === 2 && found.every((n) => n.status === 'succeeded') && found;
        },
        15_000,
        'the copies in the delivery log',
      );
      assert.ok(logged.every((n) => /^listen:lsn_/.test(n.url) && n.subscriptionId === null && n.attemptCount === 1 && n.lastStatusCode === 204));
      const detail = await api(t.url, 'GET', `/v2/notifications/${String(registered.headers['webhook-id'])}`, { token });
      assert.equal(detail.body.attempts.length, 1);
      assert.equal(detail.body.attempts[0].statusCode, 204);
      assert.equal(detail.body.attempts[0].outcome, 'succeeded');
      assert.equal((await api(t.url, 'POST', `/v2/notifications/${String(registered.headers['webhook-id'])}/retry`, { token })).status, 409, 'a copy is not retried by the worker');

      // A 500 from the local receiver is a failed copy (one attempt, no retry).
      local.respond(() => ({ status: 500, body: 'handler crashed' }));
      const failing = await send();
      const failed = await eventually(
        async () => {
          const found = await copies(failing);
          return found.length === 2 && found.every((n) => n.status === 'failed') && found;
        },
        15_000,
        'the failed copies',
      );
      assert.ok(failed.every((n) => n.lastStatusCode === 500 && n.attemptCount === 1));
      const failedDetail = await api(t.url, 'GET', `/v2/notifications/${failed[0].id}`, { token });
      assert.equal(failedDetail.body.attempts[0].responseBody, 'handler crashed');
      await eventually(() => cli.out().includes(`${failed[0].id} → 500 (`), 15_000, 'the printed 500');

      // Ctrl-C ends the session: exit 0, and no copy is written any more.
      cli.child.kill('SIGINT');
      assert.equal(await cli.exited, 0, cli.err());
      assert.match(cli.out(), /Stopped: listen session lsn_\S+ ended/);
      await sleep(1_200); // longer than a worker trusts its read of the sessions
      const later = await send();
      await eventually(async () => (await log(later)).some((n) => n.status === 'succeeded'), 15_000, 'the real notification');
      await waitForStatus(t.url, token, later, ['processed']);
      await sleep(300);
      assert.deepEqual(await copies(later), []);
    });

    it("another account's session is a 404 everywhere", async () => {
      const mine = await tenant();
      const theirs = await tenant();
      const created = await api(t.url, 'POST', '/v2/listen-sessions', { token: mine.token, body: {} });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const id = created.body.id as string;
      const requestId = await mine.send();
      const [copy] = await eventually(async () => ((found) => found.length === 2 && found)(await mine.copies(requestId)), 15_000, 'the copies');
      for (const [method, path, body] of [
        ['GET', `/v2/listen-sessions/${id}/deliveries`, undefined],
        ['POST', `/v2/listen-sessions/${id}/deliveries/${copy.id}/result`, { statusCode: 204, latencyMs: 1 }],
        ['DELETE', `/v2/listen-sessions/${id}`, undefined],
      ] as const) {
        const answer = await api(t.url, method, path, { token: theirs.token, ...(body ? { body } : {}) });
        assert.equal(answer.status, 404, `${method} ${path}`);
      }
      // Still the owner's: it takes its copies.
      const taken = await api(t.url, 'GET', `/v2/listen-sessions/${id}/deliveries?limit=10`, { token: mine.token });
      assert.equal(taken.status, 200);
      assert.equal(taken.body.data.length, 2);
      assert.equal((await api(t.url, 'GET', `/v2/listen-sessions/${id}/deliveries?bogus=1`, { token: mine.token })).status, 400);
      const reported = await api(t.url, 'POST', `/v2/listen-sessions/${id}/deliveries/${copy.id}/result`, { token: mine.token, body: { statusCode: 204, latencyMs: 3 } });
      assert.equal(reported.status, 200);
      assert.equal(reported.body.status, 'succeeded');
      const again = await api(t.url, 'POST', `/v2/listen-sessions/${id}/deliveries/${copy.id}/result`, { token: mine.token, body: { statusCode: 204, latencyMs: 3 } });
      assert.equal(again.status, 409, 'a result is recorded once');
      assert.equal((await api(t.url, 'DELETE', `/v2/listen-sessions/${id}`, { token: mine.token })).status, 204);
    });

    it('an expired session gets nothing more, and the sweep removes what no CLI took', async () => {
      const { token, send, copies } = await tenant();
      const created = await api(t.url, 'POST', '/v2/listen-sessions', { token, body: { events: ['registered-requests'] } });
      assert.deepEqual(created.body.events, ['registered-requests']);
      const id = created.body.id as string;
      const first = await send();
      await waitForStatus(t.url, token, first, ['processed']);
      const waiting = await eventually(async () => ((found) => found.length === 1 && found)(await copies(first)), 15_000, 'the copy');
      assert.equal(waiting[0].event, 'registered-requests', 'only the events asked for');
      assert.equal(waiting[0].nextAttemptAt, null, 'never due for the worker');

      // No poll for a minute: the session ends.
      await t.deps.db
        .updateTable('listen_sessions')
        .set({ expires_at: t.deps.clock() - 1 })
        .where('id', '=', id)
        .execute();
      const polled = await api(t.url, 'GET', `/v2/listen-sessions/${id}/deliveries`, { token });
      assert.equal(polled.status, 404);
      assert.match(polled.body.detail, /ended/);
      await sleep(1_200);
      const second = await send();
      await waitForStatus(t.url, token, second, ['processed']);
      await sleep(300);
      assert.deepEqual(await copies(second), []);

      // The worker's maintenance removes the ended session and the copy never forwarded.
      await t.deps.db
        .updateTable('listen_sessions')
        .set({ expires_at: t.deps.clock() - 60_000 })
        .where('id', '=', id)
        .execute();
      await purgeExpired(t.deps);
      assert.deepEqual(await copies(first), []);
      assert.equal(await t.deps.db.selectFrom('listen_sessions').select('id').where('id', '=', id).executeTakeFirst(), undefined);
    });

    it('two pollers of one session never get the same delivery', async () => {
      const { token, send, copies } = await tenant();
      const created = await api(t.url, 'POST', '/v2/listen-sessions', { token });
      const id = created.body.id as string;
      const requests = [];
      for (let i = 0; i < 6; i++) requests.push(await send());
      for (const requestId of requests) await eventually(async () => (await copies(requestId)).length === 2, 15_000, 'the copies');
      const taken: string[][] = [[], []];
      const poller = async (index: number) => {
        for (;;) {
          const answer = await api(t.url, 'GET', `/v2/listen-sessions/${id}/deliveries?limit=2&wait=1`, { token });
          assert.equal(answer.status, 200);
          if (answer.body.data.length === 0) return;
          taken[index]!.push(...answer.body.data.map((d: any) => d.notificationId));
        }
      };
      await Promise.all([poller(0), poller(1)]);
      const all = [...taken[0]!, ...taken[1]!];
      assert.equal(all.length, 12, JSON.stringify(taken));
      assert.equal(new Set(all).size, 12, 'no delivery handed out twice');
      // The long poll waits for the next one.
      const waited = api(t.url, 'GET', `/v2/listen-sessions/${id}/deliveries?wait=10`, { token });
      await sleep(300);
      const next = await send();
      const answer = await waited;
      assert.ok(answer.body.data.length >= 1);
      assert.equal(JSON.parse(answer.body.data[0].body).id, next);
      await api(t.url, 'DELETE', `/v2/listen-sessions/${id}`, { token });
    });
  });
}

describe('rewards listen: what it needs', () => {
  const run = async (args: string[], env: Record<string, string> = {}) => {
    let out = '';
    let err = '';
    const code = await runCli(['listen', ...args], { env, out: (text) => (out += text), err: (text) => (err += text) });
    return { code, out, err };
  };

  it('says what to give when the deployment, the client or the URL is missing or wrong (exit 2)', async () => {
    // No --api-url: the local service of the configuration (PORT), where nothing answers here.
    const noApi = await run(['--forward-to', 'http://localhost:3000/hooks'], { REWARDS_CLIENT_ID: 'cli_x', REWARDS_CLIENT_SECRET: 'x', PORT: '9' });
    assert.equal(noApi.code, 2);
    assert.match(noApi.err, /--api-url .*REWARDS_API_URL/);
    const noClient = await run(['--forward-to', 'http://localhost:3000/hooks', '--api-url', 'http://127.0.0.1:9']);
    assert.equal(noClient.code, 2);
    assert.match(noClient.err, /--client-id and --client-secret \(or REWARDS_CLIENT_ID and REWARDS_CLIENT_SECRET\)/);
    const badEvents = await run(['--forward-to', 'http://localhost:3000/hooks', '--events', 'registered-request'], {
      REWARDS_API_URL: 'http://127.0.0.1:9',
      REWARDS_CLIENT_ID: 'c',
      REWARDS_CLIENT_SECRET: 's',
    });
    assert.equal(badEvents.code, 2);
    assert.match(badEvents.err, /--events takes a comma-separated list of registered-requests, processed-requests/);
    const badTarget = await run(['--forward-to', 'ftp://localhost/hooks'], { REWARDS_API_URL: 'http://127.0.0.1:9', REWARDS_CLIENT_ID: 'c', REWARDS_CLIENT_SECRET: 's' });
    assert.equal(badTarget.code, 2);
    assert.match(badTarget.err, /--forward-to must be an http\(s\) URL/);
  });
});
