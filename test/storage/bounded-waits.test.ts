// needs: database, every-node-line
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { openStorage, type Storage, type StorageOptions } from '../../src/storage/database.js';
import { isDatabaseUnavailable } from '../../src/storage/database-errors.js';
import { migrateToLatest } from '../../src/storage/migrations/index.js';
import { writeReadinessProbe } from '../../src/storage/repositories/readiness-probe.js';
import type { WatchdogEvent } from '../../src/storage/postgres-pool.js';
import { openSqliteDatabase } from '../../src/storage/sqlite-driver.js';
import { createPostgresSchema, postgresUrl, testDialects } from '../support/databases.js';
import { startTcpRelay, type TcpRelay } from '../support/tcp-relay.js';

/**
 * Every wait on the database is bounded (src/storage/postgres-pool.ts; docs/deployment.md,
 * "Bounded waits on the database"): against the real PostgreSQL behind a TCP relay on loopback
 * that can go silent the way a lost primary does (its connections open, nothing answered), and
 * real SQLite with its write lock held by another connection. The bounds are configured short
 * (about a second); the assertions allow several times as much, since the machine is shared.
 */

/** How long `work` took to settle, and how: its error when it failed. */
async function timed(work: Promise<unknown>): Promise<{ ms: number; error: Error | undefined }> {
  const started = Date.now();
  const error = await work.then(
    () => undefined,
    (failure: Error) => failure,
  );
  return { ms: Date.now() - started, error };
}

const selectOne = (storage: Storage) => sql`select 1`.execute(storage.db);

if (testDialects().includes('postgres')) {
  describe('bounded waits on PostgreSQL [postgres]', () => {
    let schema: string;
    const opened: Array<{ storage: Storage; relay: TcpRelay }> = [];
    before(async () => {
      ({ schema } = await createPostgresSchema());
    });
    after(async () => {
      for (const { storage, relay } of opened) {
        await storage.close();
        await relay.close();
      }
    });

    /** A storage whose every connection goes through a fresh relay to the real server. */
    async function throughRelay(options: StorageOptions = {}) {
      const relay = await startTcpRelay(Number(new URL(postgresUrl()).port || 5432));
      const events: WatchdogEvent[] = [];
      const storage = openStorage(relay.url(postgresUrl()), { schema, poolSize: 3, onWatchdogEvent: (event) => events.push(event), ...options });
      opened.push({ storage, relay });
      return { storage, relay, events };
    }

    it('opening a connection that is never answered fails after DATABASE_CONNECT_TIMEOUT, as "the database cannot serve"', async () => {
      const { storage, relay } = await throughRelay({ bounds: { connectTimeoutMs: 500, poolTimeoutMs: 5_000 } });
      relay.silence();
      const { ms, error } = await timed(selectOne(storage));
      assert.ok(error, 'a connection nobody answers was used');
      assert.equal(isDatabaseUnavailable(error), true, String(error));
      assert.ok(ms < 4_000, `took ${ms} ms with DATABASE_CONNECT_TIMEOUT=500ms`);
    });

    it('waiting for a pooled connection while every one is busy fails after DATABASE_POOL_TIMEOUT', async () => {
      const { storage } = await throughRelay({ poolSize: 1, bounds: { poolTimeoutMs: 300 } });
      const busy = sql`select pg_sleep(3)`.execute(storage.db);
      await new Promise((resolve) => setTimeout(resolve, 200));
      const { ms, error } = await timed(selectOne(storage));
      assert.ok(error, 'a second statement ran on a pool of one while the first held it');
      assert.equal(isDatabaseUnavailable(error), true, String(error));
      assert.ok(ms < 2_500, `took ${ms} ms with DATABASE_POOL_TIMEOUT=300ms`);
      await busy;
    });

    it('a statement without an answer within DATABASE_STATEMENT_TIMEOUT fails and its connection is replaced; a shorter one is left alone', async () => {
      const { storage, events } = await throughRelay({ bounds: { statementTimeoutMs: 1_500, heartbeatTimeoutMs: 500 } });
      // The heartbeat answers all along: a statement that takes a while is not the server's silence.
      await sql`select pg_sleep(1)`.execute(storage.db);
      const { ms, error } = await timed(sql`select pg_sleep(30)`.execute(storage.db));
      assert.equal(isDatabaseUnavailable(error), true, String(error));
      assert.match(String(error?.message), /DATABASE_STATEMENT_TIMEOUT/);
      assert.ok(ms >= 1_400 && ms < 8_000, `took ${ms} ms with DATABASE_STATEMENT_TIMEOUT=1.5s`);
      assert.deepEqual(
        events.map((event) => event.kind),
        ['statement-timeout'],
      );
      await selectOne(storage);
      // Migrations may take longer than the bound: it is lifted while they run.
      await storage.withoutStatementBound(() => sql`select pg_sleep(2)`.execute(storage.db));
    });

    it('a server gone silent: the heartbeat closes the connections that heard nothing since, busy or idle, and new ones go where the address leads', async () => {
      const { storage, relay, events } = await throughRelay({ bounds: { heartbeatTimeoutMs: 500, connectTimeoutMs: 500, statementTimeoutMs: 60_000 } });
      await Promise.all([selectOne(storage), selectOne(storage), selectOne(storage)]);
      const before = relay.connections;
      const transaction = storage.db.transaction().execute(async (tx) => {
        await sql`select 1`.execute(tx);
        relay.silence();
        await sql`select 1`.execute(tx);
      });
      const { ms, error } = await timed(transaction);
      assert.equal(isDatabaseUnavailable(error), true, String(error));
      assert.ok(ms < 5_000, `the transaction waited ${ms} ms on a silent server (heartbeat 500ms, statement bound 60 s)`);
      assert.equal(storage.answering(), false);
      const silent = events.find((event) => event.kind === 'silent');
      assert.ok(silent?.kind === 'silent' && silent.closed >= 3, `the pool's three connections and the one in the transaction: ${JSON.stringify(events)}`);
      // The address leads to a server again (the new primary): served without anything restarted.
      relay.pointTo(Number(new URL(postgresUrl()).port || 5432));
      await selectOne(storage);
      assert.ok(relay.connections > before, 'no new connection was opened');
      for (let i = 0; i < 50 && !storage.answering(); i++) await new Promise((resolve) => setTimeout(resolve, 100));
      assert.equal(storage.answering(), true);
      assert.equal(events.at(-1)?.kind, 'answering');
    });

    it('every connection the service holds, the heartbeat included, probes its peer with TCP keepalive (DATABASE_KEEPALIVE)', async (t) => {
      const { storage, relay } = await throughRelay({ bounds: { heartbeatTimeoutMs: 2_000, keepAliveMs: 5_000 } });
      await Promise.all([selectOne(storage), selectOne(storage)]);
      for (let i = 0; i < 30 && relay.connections < 3; i++) await new Promise((resolve) => setTimeout(resolve, 100));
      let listing: string;
      try {
        listing = execFileSync('ss', ['-tnoH', 'state', 'established', `( dport = :${relay.port} )`]).toString();
      } catch {
        return t.skip('ss (iproute2) is not installed');
      }
      const lines = listing.split('\n').filter((line) => line.trim() !== '');
      assert.ok(lines.length >= 3, `two pooled connections and the heartbeat's: ${listing}`);
      for (const line of lines) assert.match(line, /timer:\(keepalive,/, line);
    });
  });
}

describe('bounded waits on SQLite [sqlite]', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rewards-bounded-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('a write that waits for the write lock past DATABASE_POOL_TIMEOUT fails as "the database cannot serve"; it goes through once the lock is free', async () => {
    const file = join(dir, 'rewards.db');
    const storage = openStorage(`sqlite:${file}`, { bounds: { poolTimeoutMs: 300 } });
    try {
      await migrateToLatest(storage.db);
      const other = openSqliteDatabase(file);
      other.exec('begin immediate');
      const write = () => writeReadinessProbe(storage.db, Date.now());
      const { ms, error } = await timed(write());
      assert.equal(isDatabaseUnavailable(error), true, String(error));
      assert.ok(ms >= 250 && ms < 3_000, `waited ${ms} ms with DATABASE_POOL_TIMEOUT=300ms`);
      other.exec('rollback');
      other.close();
      await write();
    } finally {
      await storage.close();
    }
  });
});
