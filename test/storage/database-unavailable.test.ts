import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { isDatabaseUnavailable } from '../../src/storage/database-errors.js';
import { insertExperience } from '../support/experiences.js';
import { api, startTestApp, type TestApp } from '../support/test-app.js';

describe('a database that cannot serve right now is told apart from a bug', () => {
  it('recognises PostgreSQL down or full, SQLite full or locked, and lost connections', () => {
    for (const error of [
      { code: '57P01', message: 'terminating connection due to administrator command' },
      { code: '57P03', message: 'the database system is starting up' },
      { code: '08006', message: 'connection failure' },
      { code: '53100', message: 'could not extend file: No space left on device' },
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
