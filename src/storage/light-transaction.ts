import type { Executor } from './database.js';
import { dialectOf } from './dialect.js';

/**
 * A transaction for bookkeeping whose loss in a power failure only makes work run again — job
 * leases (claims, renewals) and delivery attempt logs — committed without blocking on the disk.
 *
 * - SQLite: `synchronous = NORMAL` for this transaction only, on the connection it holds (so no
 *   other transaction can commit in between with the weaker setting). In WAL mode a process crash
 *   still loses nothing, and the WAL is written in order, so the next durable commit (every accepted
 *   request, every state change with its notifications) makes this one durable too. A commit
 *   then skips the fsync, which is most of its cost and blocks the event loop for that long.
 * - PostgreSQL: an ordinary transaction. Its WAL flush does not block our event loop and the
 *   server groups concurrent flushes; what costs here is round trips (each one waits its turn on
 *   a busy machine), so `singleStatement` work runs in autocommit: one round trip, not three.
 * Inside an open transaction it simply runs in it.
 */
export async function lightTransaction<T>(db: Executor, fn: (tx: Executor) => Promise<T>, options: { singleStatement?: boolean } = {}): Promise<T> {
  if (db.isTransaction) return fn(db);
  return dialectOf(db).lightTransaction(db, fn, options);
}
