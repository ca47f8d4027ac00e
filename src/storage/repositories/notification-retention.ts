import { sql } from 'kysely';
import type { Executor } from '../database.js';
import { dialectOf } from '../dialect.js';
import { precompiled } from '../precompiled.js';

/**
 * NOTIFICATION_RETENTION (docs/notifications.md, "Retention"), row by row: the ended notifications
 * (succeeded or failed; pending ones are kept however old) with an id below `beforeId`, oldest
 * first, at most `limit`, and their attempts. Ids sort by creation time, so the primary key finds
 * them without an index of its own. (On PostgreSQL whole periods are dropped instead where they
 * can be: log-partitions.ts says which rows are left to this.)
 */
const deleteEnded = precompiled<[string, number], { id: string }>(
  (_db, beforeId, limit) =>
    sql<{ id: string }>`delete from notifications where id in
          (select id from notifications where id < ${beforeId} and status <> 'pending' order by id limit cast(${limit} as int)) returning id`,
);

/** One batch, in one transaction: returns how many notifications it deleted (fewer than `limit`: nothing older is left). */
export async function deleteEndedNotifications(db: Executor, beforeId: string, limit: number): Promise<number> {
  return db.transaction().execute(async (tx) => {
    const ids = (await deleteEnded(tx, beforeId, limit)).map((row) => row.id);
    // Their attempts: SQLite's foreign key has deleted them already; the partitioned log has none.
    if (ids.length > 0) {
      const dialect = dialectOf(tx);
      await tx
        .deleteFrom('notification_attempts')
        .where(dialect.inList(sql.ref('notification_id'), dialect.list(ids)))
        .execute();
    }
    return ids.length;
  });
}
