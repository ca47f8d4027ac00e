// needs: database
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { createAccount, createClient } from '../../src/services/accounts.js';
import { openStorage, type Storage } from '../../src/storage/database.js';
import { migrateToLatest } from '../../src/storage/migrations/index.js';
import { childEnvironment, startChildService, type ChildService } from '../support/child-service.js';
import { testDialects } from '../support/databases.js';
import { insertExperience } from '../support/experiences.js';
import { eventually } from '../support/notifications.js';

const STOCK = 1_000_000;

for (const dialect of testDialects()) {
  describe(`a worker killed mid-flight and restarted finishes every job exactly once [${dialect}]`, () => {
    let env: Record<string, string>;
    let cleanup: () => Promise<void>;
    let storage: Storage;
    let service: ChildService | undefined;

    before(async () => {
      ({ env, cleanup } = await childEnvironment(dialect));
      // A short lease: the killed worker's claimed jobs become due again one second later.
      env = { ...env, JOB_LEASE: '1s', LOG_LEVEL: 'warn' };
      storage = openStorage(env.DATABASE_URL!);
      await migrateToLatest(storage.db);
    });
    after(async () => {
      service?.process.kill('SIGKILL');
      await storage.close();
      await cleanup();
    });

    it('SIGKILL while requests stream in and are processed; after restart each acknowledged request is processed once and stock is taken once per delivery', async () => {
      const account = await createAccount(storage.db, 'crash-test');
      const issued = await createClient(storage.db, account.id, ['requests:read', 'requests:write']);
      // Every prize is limited, so "stock taken" is observable for each one; several prizes make processing slower.
      const experience = await insertExperience(storage.db, account.id, {
        prizes: Array.from({ length: 4 }, (_, i) => ({ id: `p${i}`, kind: i % 2 ? 'payment' : 'coupon', stock: STOCK, value: 1 })),
      });

      service = await startChildService(env);
      const tokenResponse = await fetch(`${service.url}/v2/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'client_credentials', client_id: issued.client.clientId, client_secret: issued.clientSecret, scope: 'requests:read requests:write' }),
      });
      assert.equal(tokenResponse.status, 200);
      const { access_token: token } = (await tokenResponse.json()) as { access_token: string };

      // Keep 32 POSTs in flight until the kill; remember every id answered 202.
      const acknowledged: string[] = [];
      let killed = false;
      const url = service.url;
      const poster = async () => {
        while (!killed) {
          try {
            const response = await fetch(`${url}/v2/requests`, {
              method: 'POST',
              headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
              body: JSON.stringify({ experience: experience.name }),
            });
            if (response.status === 202) acknowledged.push(((await response.json()) as { id: string }).id);
          } catch {
            /* the service was killed under this request: it was never acknowledged */
          }
        }
      };
      const posters = Array.from({ length: 32 }, poster);
      // Requests processed (`=`) or still to do (`!=`).
      const countRequests = async (processed: '=' | '!=') =>
        Number(
          (
            await storage.db
              .selectFrom('requests')
              .select((eb) => eb.fn.countAll().as('n'))
              .where('status', processed, 'processed')
              .executeTakeFirstOrThrow()
          ).n,
        );
      // Killed once it has processed some and has some still to do, so the restart has work to
      // finish (with 32 posters the worker is seldom caught up, but a kill at such a moment would
      // leave it nothing to prove).
      await eventually(async () => ((await countRequests('=')) >= 100 && (await countRequests('!=')) >= 10 ? true : undefined), 60_000, 'the worker to process some requests and have more to do');
      service.process.kill('SIGKILL');
      killed = true;
      await service.exited;
      await Promise.all(posters);

      const unfinished = await storage.db.selectFrom('requests').select('id').where('status', '!=', 'processed').execute();
      assert.ok(unfinished.length > 0, 'the kill left work behind for the restarted worker');
      const pendingJobs = await storage.db.selectFrom('jobs').select('id').execute();

      service = await startChildService(env);
      await eventually(
        async () => {
          const pending = await storage.db.selectFrom('jobs').select('id').execute();
          const open = await storage.db.selectFrom('requests').select('id').where('status', '!=', 'processed').execute();
          return pending.length === 0 && open.length === 0 ? true : undefined;
        },
        60_000,
        'every job to finish after the restart',
      );
      service.process.kill('SIGTERM');
      assert.equal(await service.exited, 0);
      service = undefined;

      const rows = await storage.db.selectFrom('requests').select(['id', 'status', 'delivered']).execute();
      const stored = new Set(rows.map((r) => r.id));
      for (const id of acknowledged) assert.ok(stored.has(id), `acknowledged request ${id} survived the kill`);
      assert.ok(rows.every((r) => r.status === 'processed'));
      // Exactly once: units taken from each prize = deliveries of it recorded on requests.
      for (let i = 0; i < 4; i++) {
        const delivered = rows.filter((r) => (JSON.parse(r.delivered!) as any[]).some((d) => d.deliveryDetail.info.rewardId === `p${i}`)).length;
        const stock = await storage.db.selectFrom('prizes').select('stock').where('experience_id', '=', experience.id).where('id', '=', `p${i}`).executeTakeFirstOrThrow();
        assert.equal(delivered, rows.length, `every request got p${i} once`);
        assert.equal(STOCK - stock.stock!, rows.length, `p${i}: one unit per request, none taken twice`);
      }
      // One registration and one processing event per request: no lifecycle step ran twice.
      const events = await sql<{ name: string; n: number }>`select name, count(*) as n from request_events group by name`.execute(storage.db);
      const count = (name: string) => Number(events.rows.find((r) => r.name === name)?.n ?? 0);
      assert.equal(count('pedido-registrado'), rows.length);
      assert.equal(count('pedido-processado'), rows.length);
      assert.equal(count('pedido-entregue'), rows.length * 4);
      const failed = await storage.db.selectFrom('jobs').select('id').where('state', '=', 'failed').execute();
      assert.deepEqual(failed, []);
      // Informational: how much work the kill interrupted.
      console.log(`[${dialect}] ${rows.length} requests, ${acknowledged.length} acknowledged, ${unfinished.length} unfinished and ${pendingJobs.length} jobs pending at the kill`);
    });
  });
}
