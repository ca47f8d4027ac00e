import type { Db, Executor } from '../storage/database.js';
import { isDatabaseUnavailable } from '../storage/database-errors.js';

/**
 * Where the reads that may lag a little go (the delivery log's lists and details, endpoint stats,
 * the requests list: what the console reads over and over): the replica of DATABASE_READ_URL when
 * there is one (`readDb`), else the primary (`db`, the same handle). docs/deployment.md,
 * "Reads from a replica".
 */
export interface ReplicaReads {
  db: Db;
  readDb: Db;
  /** False while the replica does not answer its heartbeat: its reads go straight to the primary instead of waiting for it. */
  replicaAnswering?: () => boolean;
}

/**
 * A standby cancels a read that conflicts with the recovery it replays (SQLSTATE 40001, "canceling
 * statement due to conflict with recovery"): the read is fine, the replica could not serve it.
 */
const isRecoveryConflict = (error: unknown) => {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('40');
};

/**
 * Runs `read` on the replica, and on the primary instead when the replica cannot serve (down,
 * silent, a read cancelled by its recovery: a read is never refused for the replica's sake) or when `missing`
 * says its answer may not have reached the replica yet (a notification made a moment ago, read by
 * its id). A list is answered as the replica has it: behind the primary by the replication lag
 * (`rewards_database_read_lag_seconds`).
 */
export async function readFromReplica<T>(deps: ReplicaReads, read: (db: Executor) => Promise<T>, missing: (answer: T) => boolean = () => false): Promise<T> {
  if (deps.readDb === deps.db || deps.replicaAnswering?.() === false) return read(deps.db);
  let answer: T;
  try {
    answer = await read(deps.readDb);
  } catch (error) {
    if (!isDatabaseUnavailable(error) && !isRecoveryConflict(error)) throw error;
    return read(deps.db);
  }
  return missing(answer) ? read(deps.db) : answer;
}
