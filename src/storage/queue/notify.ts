import type pg from 'pg';
import type { Executor } from '../database.js';
import { dialectOf } from '../dialect.js';

/** PostgreSQL NOTIFY channel that tells workers in other processes that jobs were enqueued. */
export const JOBS_CHANNEL = 'rewards_jobs';

/**
 * Inside a transaction that enqueued jobs of `kinds` other processes should run, on PostgreSQL:
 * delivered to their LISTEN only if it commits. The payload names the kinds, so a listener wakes
 * only the loops that run them (a wake-up of the others is a transaction that finds nothing). The
 * transaction's owner calls it once (each call is a round trip). A no-op on SQLite, whose single
 * process is woken by JobSignals.
 */
export async function notifyOtherProcesses(db: Executor, kinds: readonly string[]): Promise<void> {
  await dialectOf(db).notify(db, JOBS_CHANNEL, kinds.join(','));
}

/** The kinds a notification names; undefined (every kind) for an empty payload, as older processes send. */
function kindsOfNotification(payload: string | undefined): string[] | undefined {
  return payload ? payload.split(',') : undefined;
}

/**
 * LISTEN on a dedicated pooled connection; reconnects after errors. Returns a stop function.
 * Polling remains the safety net: a lost notification only delays work until the next poll.
 */
export function listenForJobs(pool: pg.Pool, fn: (kinds: string[] | undefined) => void, onError: (error: unknown) => void): () => Promise<void> {
  let client: pg.PoolClient | undefined;
  let stopped = false;
  let retry: NodeJS.Timeout | undefined;
  const connect = async () => {
    try {
      const c = await pool.connect();
      if (stopped) return c.release();
      client = c;
      c.on('notification', (message) => {
        if (message.channel === JOBS_CHANNEL) fn(kindsOfNotification(message.payload));
      });
      // A dropped connection reports twice (PostgreSQL's FATAL message, then the socket's end):
      // release the client and reconnect once.
      c.once('error', (error: Error) => {
        onError(error);
        c.release(error);
        client = undefined;
        if (!stopped) retry = setTimeout(() => void connect(), 1000);
      });
      await c.query(`LISTEN ${JOBS_CHANNEL}`);
    } catch (error) {
      onError(error);
      if (!stopped) retry = setTimeout(() => void connect(), 1000);
    }
  };
  void connect();
  return async () => {
    stopped = true;
    clearTimeout(retry);
    const c = client;
    client = undefined;
    if (c) {
      await c.query(`UNLISTEN ${JOBS_CHANNEL}`).catch(() => {});
      c.release();
    }
  };
}
