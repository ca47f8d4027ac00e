// needs: database
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { openStorage } from '../../src/storage/database.js';
import { childEnvironment, clientToken, startChildService, type ChildService } from '../support/child-service.js';
import { testDialects } from '../support/databases.js';
import { eventually } from '../support/notifications.js';
import { startHttpReceiver, type Receiver } from '../support/receivers.js';
import { api } from '../support/test-app.js';

/**
 * A rolling upgrade (docs/deployment.md, "Upgrades without downtime"), with the real binaries of
 * two releases on one database: the previous release's `rewards serve` takes a stream of requests;
 * this release's process starts beside it, migrates the database while the old one serves, and
 * takes the stream over; the old one is stopped. Every request answered 202 ends processed, every
 * notification is delivered, and an old process that restarts now refuses the newer database.
 *
 * The previous release is PREVIOUS_RELEASE (git history: `git archive`). Move it to the commit of
 * each release when the next one starts (docs/maintaining.md, "Writing a migration").
 */
const PREVIOUS_RELEASE = readFileSync(new URL('previous-release', import.meta.url), 'utf8').trim();
const ROOT = new URL('../..', import.meta.url).pathname;
const RATE_PER_SECOND = 20;

/** The previous release's tree in a temporary directory, its dependencies and built console borrowed from this checkout where they fit. */
function previousTree(): string {
  const dir = mkdtempSync(join(tmpdir(), 'rewards-previous-'));
  execFileSync('sh', ['-c', `git -C "${ROOT}" archive ${PREVIOUS_RELEASE} | tar -x -C "${dir}"`]);
  // Its dependencies: this checkout's, when every package it depends on is still there in the same
  // range (a release adds packages far more often than it moves one); its own `npm ci` otherwise.
  const dependencies = (root: string) => (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { dependencies: Record<string, string> }).dependencies;
  const ours = dependencies(ROOT);
  const compatible = Object.entries(dependencies(dir)).every(([name, range]) => ours[name] === range);
  if (compatible) symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  else execFileSync('npm', ['ci', '--prefer-offline', '--no-audit', '--no-fund'], { cwd: dir, stdio: 'ignore' });
  // Its console is not what this test is about: this checkout's build spares a build at its start
  // (unless its own `npm ci` built one already: its `prepare` script does).
  if (existsSync(join(ROOT, 'console/dist')) && !existsSync(join(dir, 'console/dist'))) symlinkSync(join(ROOT, 'console/dist'), join(dir, 'console/dist'));
  return dir;
}

for (const dialect of testDialects()) {
  describe(`a rolling upgrade from the previous release [${dialect}]`, () => {
    let previous: string;
    let receiver: Receiver;
    let setup: Awaited<ReturnType<typeof childEnvironment>>;
    const children: ChildService[] = [];

    before(async () => {
      previous = previousTree();
      receiver = await startHttpReceiver();
      setup = await childEnvironment(dialect);
    });
    after(async () => {
      for (const child of children) if (child.process.exitCode === null) child.process.kill('SIGKILL');
      await receiver.close();
      await setup.cleanup();
      rmSync(previous, { recursive: true, force: true });
    });

    it('the old release serves while the new one migrates and starts; every request answered 202 is processed and every notification delivered', async () => {
      const oldBin = join(previous, 'bin/rewards.js');
      const env = { ...setup.env, CALLBACK_ALLOW_PRIVATE_NETWORKS: 'true', JOB_LEASE: '3s', LOG_LEVEL: 'warn' };
      const oldCli = (args: string[]) => {
        const result = spawnSync(process.execPath, [oldBin, ...args], { env, encoding: 'utf8', timeout: 60_000 });
        assert.equal(result.status, 0, `${args.join(' ')}: ${result.stderr}`);
        return JSON.parse(result.stdout) as Record<string, any>;
      };
      // The database as the previous release made it, and its tenant.
      oldCli(['migrate']);
      const account = oldCli(['accounts', 'create', '--name', 'rolling']);
      const client = oldCli(['clients', 'create', '--account', account.id]) as unknown as { client_id: string; client_secret: string; scopes: string };
      const experience = join(setup.dataDir, 'experience.json');
      writeFileSync(experience, JSON.stringify({ name: 'summer', title: 'Summer', prizes: [{ id: 'cpn', bucket: 'coupons', title: '10 off', value: 10, kind: 'coupon' }] }));
      oldCli(['experiences', 'import', experience, '--account', account.id]);

      const old = await startChildService(env, [], { bin: oldBin });
      children.push(old);
      let token = await clientToken(old.url, client);
      for (const event of ['registered-request', 'processed-request']) {
        const created = await api(old.url, 'POST', '/v2/subscriptions', { token, body: { event, callback: { url: `${receiver.url}/hooks` } } });
        assert.equal(created.status, 201, JSON.stringify(created.body));
      }

      // The stream: RATE_PER_SECOND requests a second to whichever process the "load balancer" points at.
      let target = old.url;
      let sending = true;
      const accepted: string[] = [];
      const refused: string[] = [];
      const stream = (async () => {
        while (sending) {
          const started = Date.now();
          const response = await api(target, 'POST', '/v2/requests', { token, body: { experience: 'summer', event: 'buy', data: { n: accepted.length } } }).catch((error: Error) => ({
            status: 0,
            body: error.message,
          }));
          if (response.status === 202) accepted.push((response.body as { id: string }).id);
          else refused.push(`${response.status} ${JSON.stringify(response.body)}`);
          await new Promise((resolve) => setTimeout(resolve, Math.max(0, 1000 / RATE_PER_SECOND - (Date.now() - started))));
        }
      })();

      await eventually(() => accepted.length >= 20, 20_000, 'the old release taking requests');
      // The new release starts beside it: it migrates the database while the old one serves.
      const fresh = await startChildService(env);
      children.push(fresh);
      assert.ok(old.process.exitCode === null, 'the old release still runs');
      const beforeSwitch = accepted.length;
      await eventually(() => accepted.length >= beforeSwitch + 20, 20_000, 'the old release serving on the migrated database');
      token = await clientToken(fresh.url, client);
      target = fresh.url;
      const switched = accepted.length;
      await eventually(() => accepted.length >= switched + 20, 20_000, 'the new release taking requests');
      // The old one stops (gracefully: its deliveries in flight end or are left to a lease).
      old.process.kill('SIGTERM');
      assert.equal(await old.exited, 0, old.output());
      const stopped = accepted.length;
      await eventually(() => accepted.length >= stopped + 20, 20_000, 'the new release alone');
      sending = false;
      await stream;
      assert.deepEqual(refused, [], 'every request was answered 202');

      // Every request processed, every notification delivered (registered and processed, once each at least).
      await eventually(
        async () => {
          const statuses = await Promise.all(accepted.map(async (id) => (await api(fresh.url, 'GET', `/v2/requests/${id}`, { token })).body.status as string));
          return statuses.every((status) => status === 'processed');
        },
        60_000,
        'every request processed',
      );
      const delivered = async () => {
        const seen = new Map<string, Set<string>>();
        for (const request of receiver.requests) {
          const body = JSON.parse(request.body) as { id: string };
          seen.set(body.id, (seen.get(body.id) ?? new Set()).add(String(request.headers['x-webhook-event'])));
        }
        return accepted.filter((id) => seen.get(id)?.size !== 2);
      };
      await eventually(async () => (await delivered()).length === 0, 60_000, 'every notification delivered').catch(async (error: Error) => {
        throw new Error(`${error.message}: missing for ${(await delivered()).slice(0, 5).join(', ')}`);
      });
      const storage = openStorage(setup.env.DATABASE_URL!);
      try {
        const pending = await storage.db.selectFrom('notifications').select('id').where('status', '<>', 'succeeded').execute();
        assert.deepEqual(pending, [], 'every notification succeeded');
      } finally {
        await storage.close();
      }

      // An old process that restarts now refuses the database the new release migrated.
      const migrationsOf = (root: string) =>
        readdirSync(join(root, 'src/storage/migrations'))
          .filter((name) => /^\d{3}_.*\.ts$/.test(name))
          .map((name) => name.replace(/\.ts$/, ''));
      const added = migrationsOf(ROOT).filter((name) => !migrationsOf(previous).includes(name));
      if (added.length > 0) {
        const restarted = spawnSync(process.execPath, [oldBin, 'migrate'], { env, encoding: 'utf8', timeout: 60_000 });
        assert.notEqual(restarted.status, 0);
        assert.match(restarted.stderr + restarted.stdout, new RegExp(added.join('|')));
      }
      fresh.process.kill('SIGTERM');
      await fresh.exited;
    });
  });
}
