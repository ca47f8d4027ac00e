import { sql } from 'kysely';
import { isPostgres } from '../migrations/types.js';
import type { Tx } from '../database.js';
import { dueJobIds } from './dueJobs.js';
import { byCreation, LeaseLostError, toClaimedJob, type ClaimedJob } from './job.js';

/** The lease of jobs locked by the transaction that completes them (no lease row is written). */
export const TRANSACTION_LEASE = '(this transaction)';

/**
 * For a transaction that also completes the jobs: up to `limit` due jobs of `kinds`, held by the
 * transaction itself instead of a written lease. On PostgreSQL the rows are locked
 * (`FOR UPDATE SKIP LOCKED`: other workers take other jobs); on SQLite a no-op write first makes
 * the transaction the single writer (waiting for the lock like any write) before it reads, so no
 * other connection can take or change these jobs until it ends. Either way a crash rolls
 * everything back and the jobs stay due. Compared with `claimDueJobs` inside the same
 * transaction this saves the lease UPDATE: ~30 µs per job on SQLite, a third of the job's writes.
 */
export async function lockDueJobs(tx: Tx, options: { kinds: string[]; limit: number; now: number }): Promise<ClaimedJob[]> {
  if (options.kinds.length === 0 || options.limit <= 0) return [];
  const postgres = isPostgres(tx as never);
  if (!postgres) await sql`update jobs set state = state where 0`.execute(tx);
  const rows = await tx
    .selectFrom('jobs')
    .selectAll()
    .where(sql<boolean>`id in (${dueJobIds({ kinds: options.kinds, limit: options.limit, now: options.now, postgres })})`)
    .execute();
  return rows.map((row) => ({ ...toClaimedJob(row), lease: TRANSACTION_LEASE })).sort(byCreation);
}

/** Deletes jobs that `lockDueJobs` returned, in the same transaction. */
export async function completeLockedJobs(tx: Tx, jobs: ClaimedJob[]): Promise<void> {
  if (jobs.length === 0) return;
  const ids = jobs.map((job) => job.id);
  for (let i = 0; i < ids.length; i += 500) {
    const chunk = ids.slice(i, i + 500);
    const result = await tx.deleteFrom('jobs').where('id', 'in', chunk).executeTakeFirst();
    if (Number(result.numDeletedRows) !== chunk.length) throw new LeaseLostError(chunk.join(','));
  }
}
