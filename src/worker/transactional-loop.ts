import { DELIVERIES } from '../storage/deliveries.js';
import { completeHeldJobs, LeaseLostError, notifyOtherProcesses, takeDueJobs, type ClaimedJob } from '../storage/queue/index.js';
import type { Tx } from '../storage/database.js';
import type { DeliveryLoop } from './delivery-loop.js';
import type { BatchContext } from './job-handlers.js';
import { BatchTrace } from './batch-trace.js';
import { claimJobs, recordFailure, type WorkerContext } from './worker-context.js';

/**
 * One batch of transactional jobs (request registration and processing): up to `batchSize` due
 * jobs are taken INSIDE the batch's transaction (`takeDueJobs`, no lease written), handled, and
 * completed in it, so taking them, their effects and their completion commit together: the row
 * locks (PostgreSQL) or the write lock (SQLite) are the lease, and a crash rolls everything back
 * with the jobs still due. That is one commit per batch instead of two; each commit is an fsync
 * that blocks the event loop on SQLite.
 *
 * The batch also offers to take the deliveries of the notifications it writes (a hand-off to this
 * worker's delivery loop): those start right after the commit. If some found no room, the batch
 * wakes other processes (NOTIFY, in the transaction) and this process's delivery loop (after the
 * commit).
 *
 * If the batch throws, nothing happened: its jobs are then claimed with committed leases and run
 * one transaction each, so a failing job is counted and retried on its own schedule.
 */
export function createTransactionalBatch(context: WorkerContext, options: { kinds: string[]; batchSize: number; deliveries: DeliveryLoop | undefined }): () => Promise<number> {
  const { deps, handlers } = context;
  const { kinds, batchSize, deliveries } = options;

  async function handle(tx: Tx, jobs: ClaimedJob[], batch: BatchContext): Promise<void> {
    const byKind = new Map<string, ClaimedJob[]>();
    for (const job of jobs) byKind.set(job.kind, [...(byKind.get(job.kind) ?? []), job]);
    for (const [kind, group] of byKind) await handlers[kind]!.handle(tx, group, context.job, batch);
  }

  /** Completes `jobs` in `tx`, or throws to roll the transaction back if one is no longer held. */
  async function completeAll(tx: Tx, jobs: ClaimedJob[]): Promise<void> {
    const held = await completeHeldJobs(tx, jobs);
    if (held.size !== jobs.length)
      throw new LeaseLostError(
        jobs
          .filter((job) => !held.has(job.id))
          .map((job) => job.id)
          .join(','),
      );
  }

  /**
   * One transaction over `claimed` jobs, or over up to `take` due jobs it takes itself: handled,
   * completed, and the deliveries it wrote handed off to this worker. Says how many jobs and,
   * when it rolled back, why.
   */
  async function transaction(take: number | undefined, claimed: ClaimedJob[] = []): Promise<{ count: number; error?: unknown }> {
    const offer = deliveries?.offer();
    const trace = deps.tracing ? new BatchTrace(deps.tracing) : undefined;
    let committed = false;
    let count = claimed.length;
    let failure: { error: unknown } | undefined;
    try {
      await deps.db.transaction().execute(async (tx) => {
        const jobs = take === undefined ? claimed : await takeDueJobs(tx, { kinds, limit: take, now: Date.now() });
        count = jobs.length;
        await handle(tx, jobs, { handOff: offer, trace });
        await completeAll(tx, jobs);
        if (offer && offer.declined > 0) await notifyOtherProcesses(tx, [DELIVERIES]);
      });
      committed = true;
      return { count };
    } catch (error) {
      failure = { error };
      return { count, error };
    } finally {
      if (offer) deliveries!.adopt(offer, committed);
      trace?.end(failure);
    }
  }

  return async function runBatch(): Promise<number> {
    const started = Date.now();
    const batch = await transaction(batchSize);
    if (!('error' in batch)) {
      if (batch.count > 0) context.log.debug({ jobs: batch.count, ms: Date.now() - started }, 'batch committed');
      return batch.count;
    }
    context.deps.onDatabaseFailure?.(batch.error);
    context.log.debug({ err: batch.error, jobs: batch.count }, 'batch failed; running its jobs one by one');
    const jobs = await claimJobs(context, kinds, Math.max(batch.count, 1));
    for (const job of jobs) {
      const single = await transaction(undefined, [job]);
      if ('error' in single) await recordFailure(context, job, single.error);
    }
    return jobs.length;
  };
}
