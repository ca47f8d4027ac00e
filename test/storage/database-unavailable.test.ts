// needs: database
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import type pg from 'pg';
import { databaseFailureReason, isDatabaseUnavailable } from '../../src/storage/database-errors.js';
import { openSqliteDatabase } from '../../src/storage/sqlite-driver.js';
import { postgresUrl, testDialects } from '../support/databases.js';
import { eventually } from '../support/notifications.js';
import { startTcpRelay, type TcpRelay } from '../support/tcp-relay.js';
import { insertExperience } from '../support/experiences.js';
import { api, startTestApp, type TestApp } from '../support/test-app.js';

describe('a database that cannot serve right now is told apart from a bug', () => {
  it('recognises PostgreSQL down or full, SQLite full or locked, and lost connections', () => {
    for (const error of [
      { code: '57P01', message: 'terminating connection due to administrator command' },
      { code: '57P03', message: 'the database system is starting up' },
      { code: '08006', message: 'connection failure' },
      { code: '53100', message: 'could not extend file: No space left on device' },
      { code: '25006', message: 'cannot execute INSERT in a read-only transaction' },
      { code: 'SQLITE_FULL', message: 'database or disk is full' },
      { code: 'SQLITE_IOERR_WRITE', message: 'disk I/O error' },
      { code: 'SQLITE_BUSY', message: 'database is locked' },
      { code: 'ECONNREFUSED', message: 'connect ECONNREFUSED 127.0.0.1:5432' },
      new Error('Connection terminated unexpectedly'),
      new AggregateError([Object.assign(new Error('connect ECONNREFUSED ::1:5432'), { code: 'ECONNREFUSED' })]),
    ]) {
      assert.equal(isDatabaseUnavailable(error), true, JSON.stringify(error));
    }
    for (const error of [{ code: '23505' }, { code: 'SQLITE_CONSTRAINT_UNIQUE' }, { code: '42P01', message: 'relation does not exist' }, new TypeError('x is undefined'), undefined]) {
      assert.equal(isDatabaseUnavailable(error), false, JSON.stringify(error));
    }
  });

  it('says why in words safe to show anyone: the kind and the code, never the message', () => {
    assert.equal(databaseFailureReason({ code: 'SQLITE_FULL', message: 'database or disk is full' }), "the database's disk is full (SQLITE_FULL)");
    assert.equal(databaseFailureReason({ code: '53100', message: 'could not extend file "base/16384/2619"' }), "the database's disk is full (SQLSTATE 53100)");
    assert.equal(databaseFailureReason({ code: '25006' }), 'the database is read-only (SQLSTATE 25006)');
    assert.equal(databaseFailureReason({ code: 'SQLITE_READONLY' }), 'the database is read-only (SQLITE_READONLY)');
    assert.equal(databaseFailureReason({ code: 'ECONNREFUSED', message: 'connect ECONNREFUSED 10.1.2.3:5432' }), 'the database is unreachable (ECONNREFUSED)');
    assert.equal(databaseFailureReason(new Error('Connection terminated unexpectedly')), 'the database is unreachable');
    assert.equal(databaseFailureReason({ code: '42501', message: 'permission denied for table requests' }), 'the database refused the write (SQLSTATE 42501)');
  });
});

describe('SQLite full: a clear 503, nothing stored, and service as usual once there is room [sqlite]', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp('sqlite');
  });
  after(() => t.close());

  it('POST /v2/requests answers 503 with Retry-After while the database file cannot grow', async () => {
    const client = await t.createClientAccount();
    const token = await t.token(client);
    await insertExperience(t.deps.db, client.accountId, { name: 'summer', prizes: [{ value: 5, stock: null }] });
    const pages = Number((await sql<{ page_count: number }>`pragma page_count`.execute(t.deps.db)).rows[0]!.page_count);
    // max_page_count stands for a full disk: SQLite answers SQLITE_FULL, as it does on ENOSPC.
    await sql.raw(`pragma max_page_count = ${pages}`).execute(t.deps.db);
    const requestsBefore = (await t.deps.db.selectFrom('requests').select('id').execute()).length;
    const big = { experience: 'summer', data: { filler: 'x'.repeat(200_000) } };
    const refused = await api(t.url, 'POST', '/v2/requests', { token, body: big });
    assert.equal(refused.status, 503, JSON.stringify(refused.body));
    assert.equal(refused.headers.get('retry-after'), '2');
    assert.match(refused.body.detail, /database is unavailable/);
    assert.equal((await t.deps.db.selectFrom('requests').select('id').execute()).length, requestsBefore);
    await sql.raw(`pragma max_page_count = 1073741823`).execute(t.deps.db);
    assert.equal((await api(t.url, 'POST', '/v2/requests', { token, body: big })).status, 202);
  });
});

/** The service's clock, moved forward by the tests instead of waiting out readiness's hold (10 s) and probe cache (1 s). */
function movableClock() {
  let offset = 0;
  return { now: () => Date.now() + offset, advance: (ms: number) => void (offset += ms) };
}

describe('readiness follows writes: 503 with the reason while the database refuses them, 200 by itself after [sqlite]', () => {
  const clock = movableClock();
  let t: TestApp;
  before(async () => {
    t = await startTestApp('sqlite', {}, { clock: clock.now });
  });
  after(() => t.close());
  const ready = () => api(t.url, 'GET', '/health/ready');

  it('a full disk: ready says 503 and why while writes are refused, and 200 once they are taken again', async () => {
    const client = await t.createClientAccount();
    const token = await t.token(client);
    await insertExperience(t.deps.db, client.accountId, { name: 'summer', prizes: [{ value: 5, stock: null }] });
    assert.equal((await ready()).status, 200);
    const pages = Number((await sql<{ page_count: number }>`pragma page_count`.execute(t.deps.db)).rows[0]!.page_count);
    await sql.raw(`pragma max_page_count = ${pages}`).execute(t.deps.db);
    const big = { experience: 'summer', data: { filler: 'x'.repeat(200_000) } };
    assert.equal((await api(t.url, 'POST', '/v2/requests', { token, body: big })).status, 503);
    const notReady = await ready();
    assert.equal(notReady.status, 503);
    assert.match(notReady.body.detail, /not ready: a write was refused \d+ s ago: the database's disk is full \(SQLITE_FULL\)/);
    // Still full, and still refused, past the hold: still not ready.
    clock.advance(11_000);
    assert.equal((await api(t.url, 'POST', '/v2/requests', { token, body: big })).status, 503);
    assert.equal((await ready()).status, 503);
    // Room again: no refusal for the hold, the probe writes, ready.
    await sql.raw(`pragma max_page_count = 1073741823`).execute(t.deps.db);
    clock.advance(11_000);
    assert.deepEqual((await ready()).body, { status: 'ok' });
    assert.equal((await api(t.url, 'POST', '/v2/requests', { token, body: big })).status, 202);
  });

  it('a database that refuses the probe itself (read-only): 503 at the next probe with no request failing first, 200 at the next after', async () => {
    assert.equal((await ready()).status, 200);
    await sql`pragma query_only = on`.execute(t.deps.db);
    try {
      clock.advance(1_000);
      const notReady = await ready();
      assert.equal(notReady.status, 503);
      assert.equal(notReady.body.detail, 'not ready: the database is read-only (SQLITE_READONLY)');
    } finally {
      await sql`pragma query_only = off`.execute(t.deps.db);
    }
    clock.advance(1_000);
    assert.equal((await ready()).status, 200);
  });
});

for (const dialect of testDialects().filter((d) => d === 'postgres')) {
  describe(`readiness follows writes on PostgreSQL: a read-only database is not ready [${dialect}]`, () => {
    const clock = movableClock();
    let t: TestApp;
    before(async () => {
      t = await startTestApp(dialect, {}, { clock: clock.now });
    });
    after(() => t.close());

    /**
     * Every connection of the service's pool in a read-only session, as after a failover to a node
     * that is (still) a standby: PostgreSQL refuses each write with SQLSTATE 25006.
     */
    async function setReadOnly(pool: pg.Pool, on: boolean) {
      const clients = await Promise.all(Array.from({ length: pool.options.max ?? 10 }, () => pool.connect()));
      try {
        for (const client of clients) await client.query(`set default_transaction_read_only = ${on ? 'on' : 'off'}`);
      } finally {
        for (const client of clients) client.release();
      }
    }

    it('503 with the reason while writes are refused (and a refused request is a 503, not a 500); 200 by itself once they are taken', async () => {
      const client = await t.createClientAccount();
      const token = await t.token(client);
      await insertExperience(t.deps.db, client.accountId, { name: 'summer', prizes: [{ value: 5, stock: null }] });
      const pool = t.deps.storage.pool!;
      const keepNewConnectionsReadOnly = (fresh: pg.PoolClient) => void fresh.query('set default_transaction_read_only = on');
      assert.equal((await api(t.url, 'GET', '/health/ready')).status, 200);
      pool.on('connect', keepNewConnectionsReadOnly);
      await setReadOnly(pool, true);
      try {
        const refused = await api(t.url, 'POST', '/v2/requests', { token, body: { experience: 'summer' } });
        assert.equal(refused.status, 503, JSON.stringify(refused.body));
        clock.advance(1_000);
        const notReady = await api(t.url, 'GET', '/health/ready');
        assert.equal(notReady.status, 503);
        assert.equal(notReady.body.detail, 'not ready: the database is read-only (SQLSTATE 25006)');
      } finally {
        pool.off('connect', keepNewConnectionsReadOnly);
        await setReadOnly(pool, false);
      }
      clock.advance(11_000);
      assert.deepEqual((await api(t.url, 'GET', '/health/ready')).body, { status: 'ok' });
      assert.equal((await api(t.url, 'POST', '/v2/requests', { token, body: { experience: 'summer' } })).status, 202);
    });
  });
}

for (const dialect of testDialects().filter((d) => d === 'postgres')) {
  describe(`a primary that goes silent (its connections open, nothing answered): fast 503s, then service again with no restart [${dialect}]`, () => {
    const clock = movableClock();
    const port = Number(new URL(postgresUrl()).port || 5432);
    let relay: TcpRelay;
    let t: TestApp;
    before(async () => {
      // The one address the service knows, in front of the real server: silenced, then pointed at a server again (the new primary).
      relay = await startTcpRelay(port);
      // Short bounds keep the test short; not so short that a busy machine misses a heartbeat while the app starts.
      const bounds = { DATABASE_HEARTBEAT_TIMEOUT: '1s', DATABASE_CONNECT_TIMEOUT: '1s', DATABASE_POOL_TIMEOUT: '1s' };
      t = await startTestApp(dialect, { DATABASE_URL: relay.url(postgresUrl()), ...bounds }, { clock: clock.now }).catch(async (error: unknown) => {
        // `after` has nothing to close then: the relay would keep the test process from ever ending.
        await relay.close();
        throw error;
      });
    });
    after(async () => {
      await t.close();
      await relay.close();
    });

    it('requests, reads and readiness answer within seconds while it is silent; liveness and /metrics answer; a new address serves at once', async () => {
      const client = await t.createClientAccount();
      const token = await t.token(client);
      const accepted = await api(t.url, 'POST', '/v2/requests', { token, body: { experience: 'summer' } });
      assert.equal(accepted.status, 202);

      relay.silence();
      for (const [method, path] of [
        ['POST', '/v2/requests'],
        ['GET', `/v2/requests/${accepted.body.id}`],
      ] as const) {
        const started = Date.now();
        const refused = await api(t.url, method, path, { token, ...(method === 'POST' ? { body: { experience: 'summer' } } : {}) });
        const tookMs = Date.now() - started;
        assert.equal(refused.status, 503, `${method} ${path}: ${JSON.stringify(refused.body)}`);
        assert.equal(refused.headers.get('retry-after'), '2');
        assert.ok(tookMs < 8_000, `${method} ${path} took ${tookMs} ms on a silent database (heartbeat 1s)`);
      }
      clock.advance(1_000);
      const notReady = await api(t.url, 'GET', '/health/ready');
      assert.equal(notReady.status, 503);
      assert.match(notReady.body.detail, /^not ready: /);
      assert.deepEqual((await api(t.url, 'GET', '/health/live')).body, { status: 'ok' }, 'the database is away, the process is not stuck: nothing to restart');
      const metrics = await fetch(`${t.url}/metrics`, { signal: AbortSignal.timeout(8_000) });
      assert.equal(metrics.status, 200);
      assert.match(await metrics.text(), /^rewards_database_answering 0$/m);

      relay.pointTo(port);
      const back = await eventually(
        async () => {
          const response = await api(t.url, 'POST', '/v2/requests', { token, body: { experience: 'summer' } });
          return response.status === 202 && response;
        },
        10_000,
        'a 202 once the address leads to a server again',
      );
      assert.equal((await api(t.url, 'GET', `/v2/requests/${back.body.id}`, { token })).status, 200);
      clock.advance(11_000);
      assert.deepEqual((await api(t.url, 'GET', '/health/ready')).body, { status: 'ok' });
      await eventually(async () => /^rewards_database_answering 1$/m.test(await (await fetch(`${t.url}/metrics`)).text()), 5_000, 'the heartbeat answered again');
    });
  });
}

describe('SQLite held by another writer past DATABASE_POOL_TIMEOUT: 503 with Retry-After, then 202 once it lets go [sqlite]', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp('sqlite', { DATABASE_POOL_TIMEOUT: '200ms' });
  });
  after(() => t.close());

  it('POST /v2/requests answers 503 within a second while the lock is held, and 202 after', async () => {
    const token = await t.token(await t.createClientAccount());
    const other = openSqliteDatabase(t.config.databaseUrl.slice('sqlite:'.length));
    other.exec('begin immediate');
    try {
      const started = Date.now();
      const refused = await api(t.url, 'POST', '/v2/requests', { token, body: { experience: 'summer' } });
      assert.equal(refused.status, 503, JSON.stringify(refused.body));
      assert.equal(refused.headers.get('retry-after'), '2');
      assert.ok(Date.now() - started < 3_000, `took ${Date.now() - started} ms with DATABASE_POOL_TIMEOUT=200ms`);
    } finally {
      other.exec('rollback');
      other.close();
    }
    assert.equal((await api(t.url, 'POST', '/v2/requests', { token, body: { experience: 'summer' } })).status, 202);
  });
});
