import type pg from 'pg';
import { sql } from 'kysely';
import type { Executor } from '../database.js';

/** PostgreSQL NOTIFY channel that tells workers in other processes that jobs were enqueued. */
export const JOBS_CHANNEL = 'rewards_jobs';

/** The kinds of the jobs enqueued, or undefined when unknown (wake every loop). */
type Listener = (kinds?: readonly string[]) => void;
const listeners = new WeakMap<object, Set<Listener>>();

/** In-process wake-up: `fn` runs whenever jobs were committed through the same database handle. */
export function onJobsEnqueued(db: object, fn: Listener): () => void {
  let set = listeners.get(db);
  if (!set) listeners.set(db, (set = new Set()));
  set.add(fn);
  return () => set.delete(fn);
}

/** Call after the transaction that enqueued jobs has committed; `kinds` lets idle loops sleep on. */
export function signalJobsEnqueued(db: object, kinds?: readonly string[]): void {
  for (const fn of listeners.get(db) ?? []) fn(kinds);
}

/** Transactions that already sent their NOTIFY: one per transaction wakes every listener. */
const notifiedTransactions = new WeakSet<object>();

/**
 * Inside the enqueueing transaction on PostgreSQL: delivered to listeners only if it commits.
 * Sent once per transaction (each call is a round trip; PostgreSQL would fold the repeats anyway).
 */
export async function notifyOtherProcesses(db: Executor): Promise<void> {
  if (db.isTransaction && notifiedTransactions.has(db)) return;
  await sql`select pg_notify(${JOBS_CHANNEL}, '')`.execute(db);
  if (db.isTransaction) notifiedTransactions.add(db);
}

/**
 * LISTEN on a dedicated pooled connection; reconnects after errors. Returns a stop function.
 * Polling remains the safety net: a lost notification only delays work until the next poll.
 */
export function listenForJobs(pool: pg.Pool, fn: Listener, onError: (error: unknown) => void): () => Promise<void> {
  let client: pg.PoolClient | undefined;
  let stopped = false;
  let retry: NodeJS.Timeout | undefined;
  const connect = async () => {
    try {
      const c = await pool.connect();
      if (stopped) return c.release();
      client = c;
      c.on('notification', (message) => {
        if (message.channel === JOBS_CHANNEL) fn();
      });
      c.on('error', (error) => {
        onError(error);
        c.release(error);
        client = undefined;
        if (!stopped) retry = setTimeout(connect, 1000);
      });
      await c.query(`LISTEN ${JOBS_CHANNEL}`);
    } catch (error) {
      onError(error);
      if (!stopped) retry = setTimeout(connect, 1000);
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
