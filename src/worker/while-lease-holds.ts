import { setTimeout as sleep } from 'node:timers/promises';
import { isDatabaseUnavailable } from '../storage/database-errors.js';

/** The first wait before writing again, doubled each time up to the last. */
const FIRST_WAIT_MS = 250;
const LONGEST_WAIT_MS = 2_000;

/**
 * Runs `write`, a write under a lease (a delivery's outcome, a failed run), again
 * while the database cannot serve (a failover, a restart) and the lease this worker holds has not
 * ended: the outcome is written when the database is back, a second or two later, instead of being
 * lost with the connection and the delivery made again once its lease ends (a minute later, by
 * default). Past the lease's end the write is given up: another worker may hold it by then,
 * and the lease is what makes sure it runs again (a worker that died never gets here). Any other
 * error is thrown at once. The write stays conditional on the lease, so a late one writes nothing.
 */
export async function whileLeaseHolds<T>(held: { readonly leaseUntil: number }, write: () => Promise<T>, onRetry?: (error: unknown, waitMs: number) => void): Promise<T> {
  for (let waitMs = FIRST_WAIT_MS; ; waitMs = Math.min(2 * waitMs, LONGEST_WAIT_MS)) {
    try {
      return await write();
    } catch (error) {
      if (!isDatabaseUnavailable(error) || Date.now() + waitMs >= held.leaseUntil) throw error;
      onRetry?.(error, waitMs);
      await sleep(waitMs);
    }
  }
}
