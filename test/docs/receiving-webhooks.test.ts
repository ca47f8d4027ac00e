// needs: database, python, go, java
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { startWorker } from '../../src/worker/start-worker.js';
import type { JobWorker } from '../../src/worker/job-worker.js';
import { testDialects } from '../support/databases.js';
import { eventually, notificationTenant } from '../support/notifications.js';
import { startHttpReceiver, unusedPort } from '../support/receivers.js';
import { api, startTestApp, type TestApp } from '../support/test-app.js';

/**
 * docs/receiving-webhooks.md is the source of these tests: every fenced block marked
 * `<!-- snippet: NAME -->` is written to a temporary directory as it stands in the page, run with
 * its language's own tool (node, python3, `go run`, `java File.java`), and given real notifications
 * of the service through a real subscription, then calls tampered with. The page's other claims a
 * receiver relies on (what a per-request URL gets, when a 2xx is not a success) are checked here
 * too, against the running service.
 *
 * A missing `go` or `java` skips that receiver, with the reason, on a developer's machine; with
 * `CI` or `REQUIRE_SNIPPET_RUNTIMES` set (.ci/run sets the latter) it fails instead, so CI cannot
 * pass without running every snippet.
 */

const ROOT = new URL('../..', import.meta.url).pathname;
const DOC = join(ROOT, 'docs', 'receiving-webhooks.md');
const REQUIRED = process.env.REQUIRE_SNIPPET_RUNTIMES ? 'REQUIRE_SNIPPET_RUNTIMES' : process.env.CI ? 'CI' : undefined;

interface Runtime {
  /** The file name the page gives the snippet. */
  file: string;
  command: string;
  args: (file: string) => string[];
  /** Prints the tool's version: exits 0 when the tool is there. */
  probe: string[];
  install: string;
}

const RUNTIMES: Record<string, Runtime> = {
  node: { file: 'receiver.mjs', command: process.execPath, args: (file) => [file], probe: ['--version'], install: 'it is the Node.js running the tests' },
  python: { file: 'receiver.py', command: 'python3', args: (file) => [file], probe: ['--version'], install: 'apt-get install -y python3' },
  go: { file: 'receiver.go', command: 'go', args: (file) => ['run', file], probe: ['version'], install: 'apt-get install -y golang-go' },
  java: { file: 'Receiver.java', command: 'java', args: (file) => [file], probe: ['-version'], install: 'apt-get install -y openjdk-17-jdk-headless' },
};

/** The marked snippets of the page, by name: the comment, then the fenced block right below it. */
function markedSnippets(markdown: string): Map<string, string> {
  const found = new Map<string, string>();
  for (const match of markdown.matchAll(/<!-- snippet: ([\w-]+) -->\n```[\w-]*\n([\s\S]*?)\n```/g)) {
    assert.ok(!found.has(match[1]!), `two snippets are marked ${match[1]}`);
    found.set(match[1]!, `${match[2]}\n`);
  }
  return found;
}

const SNIPPETS = markedSnippets(readFileSync(DOC, 'utf8'));

const availability = new Map(Object.entries(RUNTIMES).map(([name, runtime]) => [name, spawnSync(runtime.command, runtime.probe, { stdio: 'ignore' }).status === 0]));

/** Why a receiver is skipped here, or false when it runs (always under CI: a missing tool fails there). */
function skipReason(name: string): string | false {
  if (availability.get(name) || REQUIRED) return false;
  const runtime = RUNTIMES[name]!;
  return `no \`${runtime.command}\` on this machine (${runtime.install}; .ci/run installs it). Set CI or REQUIRE_SNIPPET_RUNTIMES to make this a failure`;
}

interface RunningReceiver {
  /** The lines it printed for the calls it accepted, parsed. */
  events(): Array<{ webhookId: string; type: string; body: Record<string, unknown> }>;
  /** Everything it printed so far, for assertion messages. */
  output(): string;
  stop(): Promise<void>;
}

/** Runs a snippet as the page says to, in a directory of its own; resolves once it listens on `port`. */
async function startSnippet(name: string, code: string, port: number, secret: string): Promise<RunningReceiver> {
  const runtime = RUNTIMES[name]!;
  const dir = mkdtempSync(join(tmpdir(), `rewards-snippet-${name}-`));
  writeFileSync(join(dir, runtime.file), code);
  // `npm install standardwebhooks` of the page: the project's own copy.
  if (name === 'node') symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  // Its own process group, so that stopping `go run` stops the program it built too.
  const child: ChildProcess = spawn(runtime.command, runtime.args(runtime.file), {
    cwd: dir,
    env: { ...process.env, PORT: String(port), WEBHOOK_SECRET: secret, GOTMPDIR: dir },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  let exit: string | undefined;
  const exited = new Promise<void>((resolve) =>
    child.on('exit', (code, signal) => {
      exit = `exited with ${signal ?? code}`;
      resolve();
    }),
  );
  const output = () => `stdout:\n${stdout}\nstderr:\n${stderr}`;
  const stop = async () => {
    if (exit === undefined) {
      try {
        process.kill(-child.pid!, 'SIGTERM');
      } catch {
        /* already gone */
      }
      const killer = setTimeout(() => {
        try {
          process.kill(-child.pid!, 'SIGKILL');
        } catch {
          /* already gone */
        }
      }, 10_000);
      await exited;
      clearTimeout(killer);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const listening = await eventually(
      () => {
        if (exit !== undefined) throw new Error(`the ${name} receiver ${exit} before listening\n${output()}`);
        const match = /^listening on port (\d+)$/m.exec(stdout);
        return match ? Number(match[1]) : undefined;
      },
      // `go run` compiles first; a loaded CI machine takes its time.
      120_000,
      `the ${name} receiver to listen`,
    );
    assert.equal(listening, port, output());
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    events: () =>
      stdout
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line)),
    output,
    stop,
  };
}

for (const dialect of testDialects()) {
  describe(`docs/receiving-webhooks.md: its receivers, run as written [${dialect}]`, () => {
    let t: TestApp;
    let worker: JobWorker;

    before(async () => {
      t = await startTestApp(dialect, { RETRY_INTERVAL: '50ms', RETRY_MAX_ATTEMPTS: '2' });
      worker = startWorker(t.deps, { pollIntervalMs: 25 });
    });
    after(async () => {
      await worker.stop();
      await t.close();
    });

    it('the page marks one receiver per language, no more', () => {
      assert.deepEqual([...SNIPPETS.keys()].sort(), Object.keys(RUNTIMES).sort());
    });

    for (const name of Object.keys(RUNTIMES)) {
      it(`${name}: verifies the service's notifications (answers 204, prints them) and refuses tampered calls (401)`, { skip: skipReason(name), timeout: 240_000 }, async () => {
        const runtime = RUNTIMES[name]!;
        assert.ok(availability.get(name), `\`${runtime.command}\` is not installed, and ${REQUIRED} is set: every snippet of docs/receiving-webhooks.md must run (${runtime.install})`);
        const code = SNIPPETS.get(name);
        assert.ok(code, `docs/receiving-webhooks.md has no block marked <!-- snippet: ${name} -->`);

        const tenant = await notificationTenant(t);
        const port = await unusedPort();
        const url = `http://127.0.0.1:${port}/webhooks`;
        const subscription = await tenant.subscribe({ url });
        const receiver = await startSnippet(name, code, port, subscription.secret);
        try {
          // Real notifications: a registered request, then a rejected one.
          const registeredId = await tenant.send();
          const registered = await tenant.ended(registeredId);
          assert.equal(registered.status, 'succeeded', `${JSON.stringify(registered.attempts)}\n${receiver.output()}`);
          assert.equal(registered.attempts[0].statusCode, 204);

          const rejection = await api(t.url, 'POST', '/v2/requests', { token: tenant.token, body: { experience: 'no-such-campaign' } });
          assert.equal(rejection.status, 202, JSON.stringify(rejection.body));
          const rejectedId = rejection.body.id as string;
          const rejected = await tenant.ended(rejectedId);
          assert.equal(rejected.status, 'succeeded', `${JSON.stringify(rejected.attempts)}\n${receiver.output()}`);
          assert.equal(rejected.attempts[0].statusCode, 204);

          // Calls that must not verify, made the way an attacker or a broken proxy would.
          const signer = new Webhook(subscription.secret);
          const stranger = new Webhook(`whsec_${randomBytes(32).toString('base64')}`);
          const original = JSON.stringify({ id: registeredId, rewardValue: 10 });
          const seconds = (at: Date) => String(Math.floor(at.getTime() / 1000));
          const post = async (body: string, headers: Record<string, string>) => {
            const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', 'x-webhook-event': 'registered-requests', ...headers }, body });
            await response.arrayBuffer();
            return response.status;
          };
          const signed = (webhook: Webhook, id: string, at: Date, body: string) => ({ 'webhook-id': id, 'webhook-timestamp': seconds(at), 'webhook-signature': webhook.sign(id, at, body) });
          const now = new Date();
          const minutes = (n: number) => new Date(now.getTime() + n * 60_000);
          const refused: Array<[string, string, Record<string, string>]> = [
            ['the body changed after signing', JSON.stringify({ id: registeredId, rewardValue: 1000 }), signed(signer, 'msg_tampered_body', now, original)],
            ['signed with another secret', original, signed(stranger, 'msg_other_secret', now, original)],
            ['another webhook-id than the one signed', original, { ...signed(signer, 'msg_signed_id', now, original), 'webhook-id': 'msg_swapped_id' }],
            ['a replay 10 minutes old, signed with the right secret', original, signed(signer, 'msg_replay', minutes(-10), original)],
            ['a timestamp 10 minutes ahead, signed with the right secret', original, signed(signer, 'msg_future', minutes(10), original)],
            ['no signature', original, { 'webhook-id': 'msg_unsigned', 'webhook-timestamp': seconds(now) }],
          ];
          for (const [what, body, headers] of refused) {
            assert.equal(await post(body, headers), 401, `${what}: must be refused\n${receiver.output()}`);
          }
          // During a rotation two signatures arrive: any v1 one that matches is enough.
          const rotation = signed(signer, 'msg_rotation', now, original);
          const both = `${signed(stranger, 'msg_rotation', now, original)['webhook-signature']} ${rotation['webhook-signature']}`;
          assert.equal(await post(original, { ...rotation, 'webhook-signature': both }), 204, receiver.output());

          // Printed: what verified, and nothing else.
          const events = await eventually(() => receiver.events().length >= 3 && receiver.events(), 15_000, `the ${name} receiver's output`);
          const byWebhookId = (id: string) => events.find((event) => event.webhookId === id);
          assert.deepEqual(byWebhookId(registered.id), { webhookId: registered.id, type: 'registered-requests', body: { id: registeredId, rewardValue: 10 } });
          assert.deepEqual(byWebhookId(rejected.id), {
            webhookId: rejected.id,
            type: 'registered-requests',
            body: { id: rejectedId, errorCode: 'EXPERIENCE_NOT_FOUND', message: 'experience "no-such-campaign" does not exist' },
          });
          assert.deepEqual(byWebhookId('msg_rotation'), { webhookId: 'msg_rotation', type: 'registered-requests', body: { id: registeredId, rewardValue: 10 } });
          assert.equal(events.length, 3, receiver.output());
        } finally {
          await receiver.stop();
        }
      });
    }
  });

  describe(`docs/receiving-webhooks.md: what a receiver gets and what counts as success [${dialect}]`, () => {
    let t: TestApp;
    let worker: JobWorker;

    before(async () => {
      t = await startTestApp(dialect, { CALLBACK_TIMEOUT: '300ms', RETRY_INTERVAL: '50ms', RETRY_MAX_ATTEMPTS: '2' });
      worker = startWorker(t.deps, { pollIntervalMs: 25 });
    });
    after(async () => {
      await worker.stop();
      await t.close();
    });

    it("a request's own callback URL gets no Authorization and no custom headers; a subscription's gets both", async () => {
      const receiver = await startHttpReceiver();
      try {
        const tenant = await notificationTenant(t);
        await tenant.subscribe({ url: `${receiver.url}/subscription`, authorization: { Bearer: 'receiver-token' }, customHeaders: { 'X-Tenant': 'acme' } });
        const own = await api(t.url, 'POST', '/v2/requests', { token: tenant.token, body: { experience: 'summer', registeredCallbackUrl: `${receiver.url}/own` } });
        assert.equal(own.status, 202, JSON.stringify(own.body));
        assert.equal((await tenant.ended(own.body.id)).status, 'succeeded');
        const viaSubscription = await tenant.send();
        assert.equal((await tenant.ended(viaSubscription)).status, 'succeeded');

        const ownCall = receiver.requests.find((call) => call.path === '/own');
        const subscriptionCall = receiver.requests.find((call) => call.path === '/subscription');
        assert.ok(ownCall && subscriptionCall);
        assert.equal(ownCall.headers.authorization, undefined);
        assert.equal(ownCall.headers['x-tenant'], undefined);
        assert.match(String(ownCall.headers['webhook-signature']), /^v1,/);
        assert.equal(subscriptionCall.headers.authorization, 'Bearer receiver-token');
        assert.equal(subscriptionCall.headers['x-tenant'], 'acme');
      } finally {
        await receiver.close();
      }
    });

    it('a 2xx whose body stalls past CALLBACK_TIMEOUT is a timeout, and is retried', async () => {
      const receiver = await startHttpReceiver(() => ({ status: 200, body: 'accepted', stall: true }));
      try {
        const tenant = await notificationTenant(t);
        await tenant.subscribe({ url: `${receiver.url}/stalls` });
        const notification = await tenant.ended(await tenant.send());
        assert.equal(notification.status, 'failed');
        assert.equal(notification.attempts.length, 2, 'RETRY_MAX_ATTEMPTS: the first attempt and one retry');
        assert.equal(notification.attempts[0].outcome, 'retry');
        for (const attempt of notification.attempts) {
          assert.equal(attempt.statusCode, null);
          assert.match(attempt.error, /timed out after 300 ms/);
        }
        assert.equal(receiver.requests.length, 2);
      } finally {
        await receiver.close();
      }
    });

    it('an answer longer than 1 KiB counts by its status alone: the service stops reading there', async () => {
      const receiver = await startHttpReceiver(() => ({ status: 200, body: 'x'.repeat(2048), stall: true }));
      try {
        const tenant = await notificationTenant(t);
        await tenant.subscribe({ url: `${receiver.url}/long` });
        const notification = await tenant.ended(await tenant.send());
        assert.equal(notification.status, 'succeeded');
        assert.equal(notification.attempts.length, 1);
        assert.equal(notification.attempts[0].statusCode, 200);
      } finally {
        await receiver.close();
      }
    });
  });
}
