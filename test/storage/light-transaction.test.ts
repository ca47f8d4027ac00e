// needs: database
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { lightTransaction } from '../../src/storage/light-transaction.js';
import { findAccountByIdOrName, insertAccount } from '../../src/storage/repositories/accounts.js';
import { testDialects } from '../support/databases.js';
import { startTestDatabase, type TestDatabase } from '../support/test-database.js';

for (const dialect of testDialects()) {
  describe(`lightTransaction [${dialect}]`, () => {
    let t: TestDatabase;
    before(async () => {
      t = await startTestDatabase(dialect);
    });
    after(() => t.close());

    const durability = async () =>
      dialect === 'sqlite'
        ? String((await sql<{ synchronous: number }>`pragma synchronous`.execute(t.deps.db)).rows[0]!.synchronous)
        : (await sql<{ synchronous_commit: string }>`show synchronous_commit`.execute(t.deps.db)).rows[0]!.synchronous_commit;

    it('commits or rolls back like a transaction, and leaves the connection fully durable afterwards', async () => {
      const before = await durability();
      assert.equal(before, dialect === 'sqlite' ? '2' : 'on', 'FULL / on to start with');
      await lightTransaction(t.deps.db, (tx) => insertAccount(tx, { name: 'light-committed' }));
      assert.ok(await findAccountByIdOrName(t.deps.db, 'light-committed'));
      assert.equal(await durability(), before);

      await assert.rejects(
        lightTransaction(t.deps.db, async (tx) => {
          await insertAccount(tx, { name: 'light-rolled-back' });
          throw new Error('boom');
        }),
        /boom/,
      );
      assert.equal(await findAccountByIdOrName(t.deps.db, 'light-rolled-back'), undefined);
      assert.equal(await durability(), before);
    });

    it('relaxes SQLite durability only inside; PostgreSQL keeps it and runs single statements in autocommit', async () => {
      const inside = await lightTransaction(t.deps.db, async (tx) =>
        dialect === 'sqlite'
          ? String((await sql<{ synchronous: number }>`pragma synchronous`.execute(tx)).rows[0]!.synchronous)
          : (await sql<{ synchronous_commit: string }>`show synchronous_commit`.execute(tx)).rows[0]!.synchronous_commit,
      );
      assert.equal(inside, dialect === 'sqlite' ? '1' : 'on');
      const single = await lightTransaction(t.deps.db, async (executor) => executor.isTransaction, { singleStatement: true });
      assert.equal(single, dialect === 'sqlite', 'a transaction on SQLite (to carry the pragma), autocommit on PostgreSQL');
    });

    it('joins an open transaction instead of nesting', async () => {
      await t.deps.db.transaction().execute(async (tx) => {
        await lightTransaction(tx, (same) => insertAccount(same, { name: 'light-joined' }));
        assert.ok(await findAccountByIdOrName(tx, 'light-joined'));
      });
    });
  });
}
