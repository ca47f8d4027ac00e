// needs: database, every-node-line
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { dialectOf, postgresDialect, sqliteDialect } from '../../src/storage/dialect.js';
import { openStorage } from '../../src/storage/database.js';
import { testDialects } from '../support/databases.js';
import { startTestDatabase, type TestDatabase } from '../support/test-database.js';

for (const dialect of testDialects()) {
  describe(`the storage dialect [${dialect}]`, () => {
    let t: TestDatabase;
    before(async () => {
      t = await startTestDatabase(dialect);
    });
    after(() => t.close());

    it('is the object the storage was opened with, found from the database and from a transaction', async () => {
      const expected = dialect === 'sqlite' ? sqliteDialect : postgresDialect;
      assert.equal(t.deps.dialect, expected);
      assert.equal(dialectOf(t.deps.db), expected);
      assert.equal(await t.deps.db.transaction().execute(async (tx) => dialectOf(tx)), expected);
    });

    it('reads a batch of objects as a relation with named, typed columns; a missing key is null', async () => {
      const d = dialectOf(t.deps.db);
      const rows = [
        { name: 'a', count: 3, at: 1_700_000_000_123 },
        { name: 'it\'s "quoted" ü', count: null, at: 0 },
        { name: 'c', at: 5 },
      ];
      const { rows: read } = await sql<{ name: string; count: number | null; at: number; twice: number | null }>`
        select r.name, r.count, r.at, r.count * 2 as twice from ${d.records(JSON.stringify(rows), 'r', { name: 'text', count: 'int', at: 'bigint' })} order by r.at desc`.execute(t.deps.db);
      assert.deepEqual(
        read.map((row) => ({ ...row, at: Number(row.at), twice: row.twice === null ? null : Number(row.twice) })),
        [
          { name: 'a', count: 3, at: 1_700_000_000_123, twice: 6 },
          { name: 'c', count: null, at: 5, twice: null },
          { name: 'it\'s "quoted" ü', count: null, at: 0, twice: null },
        ],
      );
    });

    it('matches a column against a list parameter, the empty list included', async () => {
      const d = dialectOf(t.deps.db);
      const values = sql`select v from (select 'x' as v union all select 'y' union all select 'z') s`;
      const pick = async (list: string[]) => (await sql<{ v: string }>`select v from (${values}) t where ${d.inList(sql.ref('v'), d.list(list))} order by v`.execute(t.deps.db)).rows.map((r) => r.v);
      assert.deepEqual(await pick(['z', 'x', 'nope']), ['x', 'z']);
      assert.deepEqual(await pick([]), []);
    });

    it('orders by byte order whatever the database collation', async () => {
      const d = dialectOf(t.deps.db);
      const { rows } = await sql<{ v: string }>`select v from (select 'acc_a' as v union all select 'acc_B' union all select 'acc_b') s order by ${d.byteOrder('v')}`.execute(t.deps.db);
      assert.deepEqual(
        rows.map((r) => r.v),
        ['acc_B', 'acc_a', 'acc_b'].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))),
      );
    });

    it('reads a top-level field of a JSON text column', async () => {
      const d = dialectOf(t.deps.db);
      const { rows } = await sql<{ v: string | null }>`select ${d.jsonField(sql`${'{"notificationId":"msg_1","n":2}'}`, 'notificationId')} as v`.execute(t.deps.db);
      assert.equal(rows[0]!.v, 'msg_1');
    });

    it('serializes transactions on a key: the second waits for the first to end', async () => {
      const d = dialectOf(t.deps.db);
      const order: string[] = [];
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let entered!: () => void;
      const isIn = new Promise<void>((resolve) => (entered = resolve));
      // SQLite has one writer: a write is what makes its transactions take turns (and what `serialize` leaves to it).
      const write = (tx: typeof t.deps.db, what: string) => sql`update accounts set name = name where id = ${what}`.execute(tx);
      const first = t.deps.db.transaction().execute(async (tx) => {
        await d.serialize(tx, 'dialect-test');
        await write(tx, 'first');
        entered();
        await held;
        order.push('first');
      });
      await isIn;
      const second = t.deps.db.transaction().execute(async (tx) => {
        await d.serialize(tx, 'dialect-test');
        await write(tx, 'second');
        order.push('second');
      });
      await new Promise((resolve) => setTimeout(resolve, 100));
      release();
      await Promise.all([first, second]);
      assert.deepEqual(order, ['first', 'second']);
    });

    if (dialect === 'postgres') {
      it('locks rows for update and skips them when asked (PostgreSQL)', async () => {
        const d = dialectOf(t.deps.db);
        const other = openStorage(t.databaseUrl);
        try {
          await sql`create table dialect_rows (id text primary key)`.execute(t.deps.db);
          await sql`insert into dialect_rows values ('a'), ('b')`.execute(t.deps.db);
          let release!: () => void;
          const held = new Promise<void>((resolve) => (release = resolve));
          let locked!: () => void;
          const isLocked = new Promise<void>((resolve) => (locked = resolve));
          const holder = t.deps.db.transaction().execute(async (tx) => {
            await sql`select id from dialect_rows where id = 'a'${d.rowLock()}`.execute(tx);
            locked();
            await held;
          });
          await isLocked;
          const skipped = await other.db.transaction().execute(async (tx) => (await sql<{ id: string }>`select id from dialect_rows order by id${d.rowLock({ skipLocked: true })}`.execute(tx)).rows);
          assert.deepEqual(
            skipped.map((r) => r.id),
            ['b'],
          );
          release();
          await holder;
        } finally {
          await other.close();
        }
      });
    }
  });
}

describe('what differs between the databases is in one place', () => {
  const root = new URL('../../src/', import.meta.url).pathname;
  const files = (dir: string): string[] =>
    readdirSync(dir).flatMap((name) => {
      const path = join(dir, name);
      return statSync(path).isDirectory() ? files(path) : path.endsWith('.ts') ? [path] : [];
    });
  // Asking which database it is, or writing one database's JSON functions or positional reads.
  const dialectSpecific = /instanceof (Postgres|Sqlite)Adapter|isPostgres|=== 'postgres'|=== 'sqlite'|json_each|jsonb_array_elements|jsonb_to_recordset|->> ?\d/;
  const code = (path: string) =>
    readFileSync(path, 'utf8')
      .replace(/\/\*[\s\S]*?\*\//g, '')
      .replace(/^\s*\/\/.*$/gm, '');

  it('no file of src/ but storage/dialect.ts asks which database it runs on or writes its JSON functions', () => {
    const offenders = files(root).filter((path) => !path.endsWith('storage/dialect.ts') && dialectSpecific.test(code(path)));
    assert.deepEqual(
      offenders.map((path) => relative(root, path)),
      [],
    );
  });

  it('would find one', () => {
    assert.ok(dialectSpecific.test('isPostgres(db) ? sql`e ->> 0` : sql`value ->> 0`'));
    assert.ok(dialectSpecific.test('from json_each(${ids})'));
  });
});
