// needs: database, every-node-line
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { openStorage, type Storage } from '../../src/storage/database.js';
import { createPostgresSchema, postgresUrl, testDialects } from '../support/databases.js';

// PostgreSQL restarted under the service ends every connection, including one a transaction holds
// between two statements. That must fail the transaction, not the process (the chaos suite's
// "PostgreSQL restarted" run found the process ending with an unhandled 'error' event).
if (testDialects().includes('postgres')) {
  describe('a connection PostgreSQL terminates while in use [postgres]', () => {
    let storage: Storage;
    before(async () => {
      const { schema } = await createPostgresSchema();
      storage = openStorage(postgresUrl(), { schema, poolSize: 2 });
    });
    after(() => storage.close());

    it('fails the transaction holding it; the process lives on and the pool serves new connections', async () => {
      const uncaught: unknown[] = [];
      const record = (error: unknown) => uncaught.push(error);
      process.on('uncaughtException', record);
      try {
        const outcome = await storage.db
          .transaction()
          .execute(async (tx) => {
            const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(tx);
            // Another connection ends this one while the transaction is idle between statements.
            const other = openStorage(postgresUrl());
            await sql`select pg_terminate_backend(${rows[0]!.pid})`.execute(other.db);
            await other.close();
            await sleep(100);
            await sql`select 1`.execute(tx);
          })
          .then(
            () => 'committed',
            (error: Error) => error.message,
          );
        assert.notEqual(outcome, 'committed');
        assert.deepEqual(uncaught, []);
        const { rows } = await sql<{ one: number }>`select 1 as one`.execute(storage.db);
        assert.equal(rows[0]!.one, 1);
      } finally {
        process.off('uncaughtException', record);
      }
    });
  });
}
