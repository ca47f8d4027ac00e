import type { Db } from '../../storage/database.js';
import { lightTransaction } from '../../storage/light-transaction.js';
import { completeHeldJobs, type ClaimedJob } from '../../storage/queue/index.js';
import { recordAttempts, type NotificationAttemptRow } from '../../storage/repositories/notifications.js';
import type { NotificationStatus } from '../../storage/tables/index.js';
import { enqueueDeliveries } from './schedule-delivery.js';

const GATHER_MS = 5;

export interface AttemptSettlement {
  job: ClaimedJob;
  attempt: NotificationAttemptRow;
  status: NotificationStatus;
  nextAttemptAt: number | null;
  now: number;
}

/**
 * Group commit of finished attempts. Each attempt must complete its job, log itself, move its
 * notification on and maybe enqueue the next attempt, atomically and under the job's lease. One
 * transaction per attempt cost an fsync (~1.1 ms on this machine's SQLite) per delivery and made
 * delivery CPU-bound at ~200/s; attempts finishing together now share one transaction.
 * An attempt whose lease was lost (another worker took the job over) is left out, not recorded.
 */
export class AttemptLogWriter {
  #queue: Array<{ settlement: AttemptSettlement; resolve: (recorded: boolean) => void; reject: (error: unknown) => void }> = [];
  #flushing = false;

  constructor(
    private readonly db: Db,
    private readonly maxBatch = 256,
  ) {}

  /** Resolves true once committed, false when the job's lease was lost meanwhile. */
  settle(settlement: AttemptSettlement): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ settlement, resolve, reject });
      if (!this.#flushing) {
        this.#flushing = true;
        // A commit blocks the event loop (SQLite), so nothing joins a batch while one is written:
        // a 5 ms window lets the attempts finishing meanwhile share the next commit. It delays
        // only the bookkeeping, not the call to the receiver.
        setTimeout(() => void this.#drain(), GATHER_MS);
      }
    });
  }

  async #drain(): Promise<void> {
    while (this.#queue.length > 0) {
      const batch = this.#queue.splice(0, this.maxBatch);
      try {
        const held = await lightTransaction(this.db, async (tx) => {
          const heldIds = await completeHeldJobs(tx, batch.map(({ settlement }) => settlement.job));
          const recorded = batch.map((entry) => entry.settlement).filter((settlement) => heldIds.has(settlement.job.id));
          // One time for the whole group commit, so that the same outcome is one UPDATE.
          const now = Math.max(...recorded.map((settlement) => settlement.now));
          await recordAttempts(tx, recorded.map((settlement) => ({ ...settlement, now })));
          const retries = new Map<number, string[]>();
          for (const settlement of recorded) {
            if (settlement.nextAttemptAt !== null) {
              retries.set(settlement.nextAttemptAt, [...(retries.get(settlement.nextAttemptAt) ?? []), settlement.attempt.notification_id]);
            }
          }
          for (const [runAt, ids] of retries) await enqueueDeliveries(tx, ids, { runAt, now: batch[0]!.settlement.now, wakeOtherProcesses: false });
          return heldIds;
        });
        for (const entry of batch) entry.resolve(held.has(entry.settlement.job.id));
      } catch (error) {
        for (const entry of batch) entry.reject(error);
      }
    }
    this.#flushing = false;
  }
}
