// needs: database, every-node-line
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { testDialects } from './support/databases.js';
import { childEnvironment, listeningPorts, runCli, startChildService } from './support/child-service.js';

for (const dialect of testDialects()) {
  describe(`the rewards service process [${dialect}]`, () => {
    let env: Record<string, string>;
    let dataDir: string;
    let cleanup: () => Promise<void>;
    before(async () => {
      ({ env, dataDir, cleanup } = await childEnvironment(dialect));
    });
    after(() => cleanup());

    it('`rewards migrate` applies every migration once and is safe to re-run', () => {
      const first = runCli(['migrate'], env);
      assert.equal(first.status, 0, first.stderr);
      const applied = JSON.parse(first.stdout).applied as string[];
      assert.ok(applied.includes('001_accounts_clients_keys'));
      const second = runCli(['migrate'], env);
      assert.equal(second.status, 0, second.stderr);
      assert.deepEqual(JSON.parse(second.stdout), { applied: [] });
    });

    it('first start creates the operator and its 0600 credentials file; they obtain an admin token; SIGTERM exits 0', async () => {
      const service = await startChildService(env);
      try {
        const file = join(dataDir, 'operator-credentials.json');
        assert.equal(statSync(file).mode & 0o777, 0o600);
        const credentials = JSON.parse(readFileSync(file, 'utf8'));
        assert.match(credentials.client_secret, /^rrs_cs_/);
        assert.match(service.output(), /operator-credentials\.json/);
        assert.ok(!service.output().includes(credentials.client_secret), 'the secret is never logged');
        const response = await fetch(`${service.url}/v2/oauth/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ grant_type: 'client_credentials', client_id: credentials.client_id, client_secret: credentials.client_secret, scope: 'admin' }),
        });
        assert.equal(response.status, 200);
      } finally {
        service.process.kill('SIGTERM');
      }
      assert.equal(await service.exited, 0);
    });

    it('a second start keeps the operator: no new credentials are written', async () => {
      const before = readFileSync(join(dataDir, 'operator-credentials.json'), 'utf8');
      const service = await startChildService(env);
      service.process.kill('SIGTERM');
      assert.equal(await service.exited, 0);
      assert.equal(readFileSync(join(dataDir, 'operator-credentials.json'), 'utf8'), before);
    });

    it('a bad configuration value stops the start with a clear message', () => {
      const result = runCli(['serve'], { ...env, RETRY_INTERVAL: 'abc' });
      assert.equal(result.status, 2);
      assert.match(result.stderr, /RETRY_INTERVAL: expected a number with a unit/);
    });
  });
}

describe('finding the port a child service listens on', () => {
  it('lists the ports a process listens on, not the ports of another process, and none once it has exited', async () => {
    const server: Server = createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const child = spawn(process.execPath, ['-e', "require('node:http').createServer().listen(0, '127.0.0.1', function () { console.log(this.address().port) })"], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      const [line] = (await once(child.stdout, 'data')) as [Buffer];
      const ours = (server.address() as AddressInfo).port;
      const theirs = Number(line.toString().trim());
      assert.ok(listeningPorts(process.pid).includes(ours));
      assert.ok(!listeningPorts(process.pid).includes(theirs));
      assert.deepEqual(listeningPorts(child.pid!), [theirs]);
      child.kill();
      await once(child, 'exit');
      assert.deepEqual(listeningPorts(child.pid!), [], 'a process that has exited listens on nothing');
    } finally {
      child.kill();
      server.close();
    }
  });
});
