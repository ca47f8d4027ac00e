// needs: sqlite
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { childEnvironment, cliTenant, clientToken, runCli, runCliInProcess, startChildService, type ChildService } from '../support/child-service.js';
import { eventually, verifyWebhook } from '../support/notifications.js';
import { startHttpReceiver, unusedPort, type Receiver } from '../support/receivers.js';

/**
 * `rewards listen` and `rewards demo` find the running service from the configuration the other
 * commands read (src/cli/service-url.ts): --api-url, else REWARDS_API_URL, else PUBLIC_URL, else
 * http://HOST:PORT, from the configuration file under the environment. The service is the real
 * `rewards serve` in a child process, on a port the test gives it, since the commands must find it
 * there.
 */
const BIN = join(import.meta.dirname, '..', '..', 'bin', 'rewards.js');

describe('rewards listen and rewards demo next to the local service [sqlite]', () => {
  let service: ChildService;
  let env: Record<string, string>;
  let dataDir: string;
  let port: number;
  let receiver: Receiver;
  let cleanup: () => Promise<void>;

  before(async () => {
    ({ env, dataDir, cleanup } = await childEnvironment('sqlite'));
    env.LOG_LEVEL = 'warn';
    port = await unusedPort();
    service = await startChildService({ ...env, PORT: String(port) });
    receiver = await startHttpReceiver(() => ({ status: 204 }));
  });
  after(async () => {
    if (service.process.exitCode === null) service.process.kill('SIGTERM');
    await service.exited;
    await receiver.close();
    await cleanup();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('listen: finds the service through PORT in the configuration file, without --api-url, and prints one signing secret per line', async () => {
    const { accountId, client } = await cliTenant(env, dataDir, 'listener');
    const configFile = join(dataDir, 'rewards.env');
    writeFileSync(configFile, `PORT=${port}\nDATA_DIR=${dataDir}\n`);
    const listenEnv = { PATH: env.PATH!, REWARDS_CLIENT_ID: client.client_id, REWARDS_CLIENT_SECRET: client.client_secret, LOG_LEVEL: 'silent' };
    const child = spawn(process.execPath, [BIN, '--config', configFile, 'listen', '--forward-to', `${receiver.url}/hooks`], { env: listenEnv, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      await eventually(() => out.includes('Ready!') && out.includes('\n  whsec_'), 30_000, `Ready! (stderr: ${err})`);
      const lines = out.split('\n');
      const ready = lines.findIndex((line) => line.startsWith('Ready!'));
      assert.match(lines[ready]!, new RegExp(`^Ready! Forwarding events for account ${accountId} to ${receiver.url}/hooks \\(signing secret: one per line below`));
      assert.ok(!lines[ready]!.includes('whsec_'), 'no secret on the Ready! line itself');
      const secretLines = lines.slice(ready + 1).filter((line) => line.startsWith('  '));
      assert.deepEqual(
        secretLines.map((line) => line.replace(/whsec_\S+/, 'whsec_…')),
        ["  whsec_… of the account's default secret"],
      );
      const defaultSecret = /whsec_\S+/.exec(secretLines[0]!)![0];

      const token = await clientToken(service.url, client);
      const sent = await fetch(`${service.url}/v2/requests`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ experience: 'summer', event: 'purchase' }),
      });
      assert.equal(sent.status, 202);
      const requestId = ((await sent.json()) as { id: string }).id;
      const forwarded = await eventually(
        () => receiver.requests.find((r) => r.headers['x-webhook-event'] === 'processed-requests' && JSON.parse(r.body).id === requestId),
        30_000,
        'the forwarded webhook',
      );
      assert.equal(verifyWebhook(defaultSecret, forwarded).id, requestId);
    } finally {
      child.kill('SIGINT');
    }
    assert.equal(await exited, 0, err);
    assert.match(out, /Stopped: listen session lsn_\w+ ended\./);
  });

  it('demo: sets up once, then reuses its client; both webhooks verified each time', { timeout: 120_000 }, async () => {
    const demoEnv = { ...env, PORT: String(port) };
    const first = runCli(['demo'], demoEnv);
    assert.equal(first.status, 0, `${first.stdout}\n${first.stderr}`);
    assert.match(first.stdout, new RegExp(`^Service: http://127\\.0\\.0\\.1:${port}\\n`));
    assert.match(first.stdout, /OAuth client cli_\w+ \(new, saved to /);
    assert.match(first.stdout, /registered-requests msg_\w+: signature verified/);
    assert.match(first.stdout, /processed-requests msg_\w+: signature verified/);
    const file = join(dataDir, 'demo-credentials.json');
    assert.equal(statSync(file).mode & 0o777, 0o600);
    const saved = JSON.parse(readFileSync(file, 'utf8')) as { client_id: string; client_secret: string };
    assert.ok(first.stdout.includes(`export REWARDS_CLIENT_ID=${saved.client_id} REWARDS_CLIENT_SECRET=${saved.client_secret}`), 'the credentials, printed to copy');
    assert.ok(
      first.stdout.includes(`curl -s http://127.0.0.1:${port}/v2/requests -H "Authorization: Bearer $TOKEN" -H 'content-type: application/json' -d '{"experience":"demo","event":"purchase"}'`),
    );

    const second = runCli(['demo'], demoEnv);
    assert.equal(second.status, 0, `${second.stdout}\n${second.stderr}`);
    assert.ok(second.stdout.includes(`OAuth client ${saved.client_id} (kept from `), second.stdout);
    assert.match(second.stdout, /Verified webhooks: registered-requests and processed-requests of req_\w+\./);
    // One account, one client, one experience: the second run added a reward request only.
    const token = await clientToken(service.url, { ...saved, scopes: 'requests:read' });
    const listed = (await (await fetch(`${service.url}/v2/requests`, { headers: { authorization: `Bearer ${token}` } })).json()) as { data: Array<{ experience: string; status: string }> };
    assert.equal(listed.data.length, 2);
    assert.ok(listed.data.every((r) => r.experience === 'demo' && r.status === 'processed'));
  });
});

describe('where listen and demo look for the service, when nothing answers there', () => {
  const run = async (args: string[], env: Record<string, string>) => runCliInProcess(args, { PATH: process.env.PATH ?? '', ...env });
  const credentials = { REWARDS_CLIENT_ID: 'cli_x', REWARDS_CLIENT_SECRET: 'x' };

  it('names the address and where it came from: PORT and HOST, a wildcard HOST on loopback, PUBLIC_URL; exit 2', async () => {
    const port = await unusedPort();
    const byPort = await run(['listen', '--forward-to', 'http://localhost:3000/hooks'], { ...credentials, PORT: String(port) });
    assert.equal(byPort.status, 2);
    assert.match(
      byPort.stderr,
      new RegExp(`no service answers at http://127\\.0\\.0\\.1:${port}, the address from PORT \\(environment\\) and HOST \\(default\\)\\. Start the local service \\(npm start\\)`),
    );
    assert.match(byPort.stderr, /--api-url URL \(or REWARDS_API_URL\)/);

    const wildcard = await run(['listen', '--forward-to', 'http://localhost:3000/hooks'], { ...credentials, PORT: String(port), HOST: '0.0.0.0' });
    assert.match(wildcard.stderr, new RegExp(`no service answers at http://127\\.0\\.0\\.1:${port},`));

    const publicUrl = await run(['listen', '--forward-to', 'http://localhost:3000/hooks'], { ...credentials, PORT: String(port), PUBLIC_URL: `http://localhost:${port}` });
    assert.match(publicUrl.stderr, new RegExp(`no service answers at http://localhost:${port}, the address from PUBLIC_URL \\(environment\\)`));

    const demo = await run(['demo'], { PORT: String(port) });
    assert.equal(demo.status, 2);
    assert.match(demo.stderr, new RegExp(`no service answers at http://127\\.0\\.0\\.1:${port}, .*Start it first, in another terminal: npm start`));
  });
});
