import { sql } from 'kysely';
import type { Executor } from '../database.js';
import { precompiled } from '../precompiled.js';

/**
 * NOTIFICATION_RETENTION (docs/notifications.md, "Retention"): the ended notifications (succeeded
 * or failed; pending ones are kept however old) created before `beforeId`, oldest first, at most
 * `limit`. Ids sort by creation time, so the primary key finds them without an index of its own.
 * Their attempts go with them (ON DELETE CASCADE).
 */
const deleteEnded = precompiled<[string, number], { id: string }>(
  (_db, beforeId, limit) =>
    sql<{ id: string }>`delete from notifications where id in
          (select id from notifications where id < ${beforeId} and status <> 'pending' order by id limit cast(${limit} as int)) returning id`,
);

/** One batch, in one transaction: returns how many notifications it deleted (fewer than `limit`: nothing older is left). */
export async function deleteEndedNotifications(db: Executor, beforeId: string, limit: number): Promise<number> {
  return (await deleteEnded(db, beforeId, limit)).length;
}
