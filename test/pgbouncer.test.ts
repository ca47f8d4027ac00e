// needs: postgres
// Behind PgBouncer in transaction pooling mode (docs/deployment.md, "Behind a connection pooler"):
// one API process and two worker processes whose DATABASE_URL goes through PgBouncer. LISTEN
// needs a session that stays one server connection, so the workers LISTEN on a direct connection
// (DATABASE_LISTEN_URL); with DATABASE_LISTEN_URL=off they poll. Either way every notification
// arrives exactly once. Runs when TEST_PGBOUNCER_URL is set (`.ci/run` starts PgBouncer with
// scripts/pgbouncer-setup.sh); the database behind it is emptied first. Migrations go through it
// too: several processes starting at once must not wait on each other's migration lock.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { openStorage } from '../src/storage/database.js';
import { migrateToLatest } from '../src/storage/migrations/index.js';
import { cliTenant, clientToken, startChildService, startWorkerProcesses, type ChildService } from './support/child-service.js';
import { eventually } from './support/notifications.js';
import { startHttpReceiver, type Receiver } from './support/receivers.js';
import { sendRequests } from './support/requests.js';
import { api } from './support/test-app.js';

const BOUNCER_URL = process.env.TEST_PGBOUNCER_URL;
const POSTGRES_URL = process.env.TEST_POSTGRES_URL;

/** The same database as BOUNCER_URL, reached directly at TEST_POSTGRES_URL's host and port. */
function directUrl(): string {
  const direct = new URL(BOUNCER_URL!);
  const server = new URL(POSTGRES_URL!);
  direct.host = server.host;
  return direct.toString();
}

describe(
  'behind PgBouncer in transaction mode: 1 API and 2 worker processes [postgres]',
  { skip: BOUNCER_URL && POSTGRES_URL ? false : 'set TEST_PGBOUNCER_URL (scripts/pgbouncer-setup.sh) and TEST_POSTGRES_URL' },
  () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'rewards-pgbouncer-'));
    const services: ChildService[] = [];
    const receivers: Receiver[] = [];
    let env: Record<string, string>;

    before(async () => {
      if (!BOUNCER_URL || !POSTGRES_URL) return;
      const client = new pg.Client({ connectionString: directUrl() });
      await client.connect();
      await client.query('drop schema if exists public cascade; create schema public');
      await client.end();
      env = {
        PATH: process.env.PATH ?? '',
        DATA_DIR: dataDir,
        DATABASE_URL: BOUNCER_URL,
        SECRET_KEY: randomBytes(32).toString('base64'),
        LOG_LEVEL: 'warn',
        CALLBACK_ALLOW_PRIVATE_NETWORKS: 'true',
        PUBLIC_URL: 'http://127.0.0.1:8080',
        // PgBouncer 1.18 (Debian 12) in transaction mode cannot hold prepared statements.
        DATABASE_PREPARED_STATEMENTS: 'off',
      };
    });

    after(async () => {
      for (const s of services) if (s.process.exitCode === null && s.process.signalCode === null) s.process.kill('SIGKILL');
      await Promise.all(services.map((s) => s.exited));
      for (const r of receivers) await r.close();
      rmSync(dataDir, { recursive: true, force: true });
    });

    async function run(listen: 'direct' | 'off', requests: number): Promise<void> {
      const receiver = await startHttpReceiver();
      receivers.push(receiver);
      const { client } = await cliTenant(env, dataDir, `bouncer-${listen}-${Date.now()}`);

      const listenEnv = { DATABASE_LISTEN_URL: listen === 'direct' ? directUrl() : 'off' };
      const apiService = await startChildService({ ...env, ...listenEnv }, ['--role', 'api']);
      services.push(apiService);
      const workers = await startWorkerProcesses(Array.from({ length: 2 }, () => ({ ...env, ...listenEnv, METRICS_PORT: '0' })));
      services.push(...workers);
      const token = await clientToken(apiService.url, client);
      for (const event of ['registered-requests', 'processed-requests']) {
        const created = await api(apiService.url, 'POST', '/v2/subscriptions', { token, body: { event, callback: { url: `${receiver.url}/${event}` } } });
        assert.equal(created.status, 201, JSON.stringify(created.body));
      }

      const ids = await sendRequests(apiService.url, token, requests, 20);
      await eventually(() => receiver.requests.length >= requests * 2, 120_000, `${requests * 2} notifications through PgBouncer`);
      const webhookIds = receiver.requests.map((r) => String(r.headers['webhook-id']));
      assert.equal(new Set(webhookIds).size, requests * 2, 'each notification arrived once');
      const arrivedFor = new Set(receiver.requests.map((r) => `${(JSON.parse(r.body) as { id: string }).id} ${String(r.headers['x-webhook-event'])}`));
      for (const id of ids) for (const event of ['registered-requests', 'processed-requests']) assert.ok(arrivedFor.has(`${id} ${event}`), `${event} of ${id}`);

      // Woken by NOTIFY through the direct session, or never (polling only).
      let notified = 0;
      for (const worker of workers) {
        const text = await (await fetch(`${worker.url}/metrics`)).text();
        notified += Number(/^rewards_job_wakeups_total\{source="notify"\} (\S+)$/m.exec(text)?.[1] ?? 0);
      }
      if (listen === 'direct') assert.ok(notified > 0, 'the workers were woken by NOTIFY');
      else assert.equal(notified, 0, 'no LISTEN: no NOTIFY wake-up');

      for (const s of [apiService, ...workers]) s.process.kill('SIGTERM');
      for (const s of [apiService, ...workers]) assert.equal(await s.exited, 0, s.output());
    }

    it('processes starting at once migrate through it: one applies the migrations, none waits on a lock left behind', async () => {
      // Kysely's session-level lock was taken and released on different server connections here:
      // the others then waited for the server_idle_timeout (10 minutes), every time.
      const stores = Array.from({ length: 4 }, () => openStorage(BOUNCER_URL!));
      const direct = new pg.Client({ connectionString: directUrl() });
      await direct.connect();
      const advisoryLocks = "from pg_locks where locktype = 'advisory' and database = (select oid from pg_database where datname = current_database())";
      try {
        const reports = await Promise.race([
          Promise.all(stores.map((storage) => migrateToLatest(storage.db))),
          sleep(30_000).then(() => assert.fail('the migrations did not finish within 30 s: a migrator waits on a lock')),
        ]);
        assert.deepEqual(reports.map((report) => report.applied.length > 0).sort(), [false, false, false, true], 'exactly one process applied the migrations');
        const { rows } = await direct.query(`select count(*)::int as held ${advisoryLocks}`);
        assert.equal(rows[0].held, 0, 'no advisory lock is left on a server connection');
      } finally {
        // A migrator stuck on a lock left behind would keep its pool, and this file, from ending.
        await direct.query(`select pg_terminate_backend(pid) ${advisoryLocks}`);
        await direct.end();
        await Promise.all(stores.map((storage) => storage.close().catch(() => {})));
      }
    });

    it('LISTEN on a direct connection (DATABASE_LISTEN_URL): every notification arrives once', async () => {
      await run('direct', 200);
    });

    it('LISTEN off (DATABASE_LISTEN_URL=off): the workers poll, every notification arrives once', async () => {
      await run('off', 50);
    });
  },
);
