// needs: database
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { precompiled } from '../../src/storage/precompiled.js';
import { insertAccount } from '../../src/storage/repositories/accounts.js';
import { testDialects } from '../support/databases.js';
import { startTestDatabase, type TestDatabase } from '../support/test-database.js';

for (const dialect of testDialects()) {
  describe(`precompiled queries [${dialect}]`, () => {
    let t: TestDatabase;
    before(async () => {
      t = await startTestDatabase(dialect);
      await insertAccount(t.deps.db, { name: 'precompiled-a' });
      await insertAccount(t.deps.db, { name: 'precompiled-b' });
    });
    after(() => t.close());

    it('substitutes each call’s arguments, in any order, next to constants of the query', async () => {
      const byName = precompiled((db, first: string, second: string) =>
        db
          .selectFrom('accounts')
          .select('name')
          .where('active', '=', 1)
          .where((eb) => eb.or([eb('name', '=', second), eb('name', '=', first)]))
          .orderBy('name'),
      );
      assert.deepEqual(await byName(t.deps.db, 'precompiled-a', 'nobody'), [{ name: 'precompiled-a' }]);
      assert.deepEqual(await byName(t.deps.db, 'nobody', 'precompiled-b'), [{ name: 'precompiled-b' }]);
      assert.deepEqual(await byName(t.deps.db, 'precompiled-b', 'precompiled-a'), [{ name: 'precompiled-a' }, { name: 'precompiled-b' }]);
      const inTransaction = await t.deps.db.transaction().execute((tx) => byName(tx, 'precompiled-a', 'precompiled-a'));
      assert.deepEqual(inTransaction, [{ name: 'precompiled-a' }]);
    });

    it('refuses a query that does not use every argument as a value', async () => {
      const careless = precompiled((db, _name: string) => db.selectFrom('accounts').select('name'));
      await assert.rejects(careless(t.deps.db, 'x'), /uses 0 of its 1 arguments/);
    });
  });
}
