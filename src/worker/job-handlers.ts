import type { Logger } from '../logger.js';
import type { Db, Tx } from '../storage/database.js';
import type { HandOff } from '../storage/deliveries.js';
import type { ClaimedJob } from '../storage/queue/index.js';
import type { BatchTrace } from './batch-trace.js';

/** What a handler may use besides its transaction. */
export interface JobContext {
  db: Db;
  log: Logger;
  clock: () => number;
  workerId: string;
}

/** What a transactional batch offers its handlers. */
export interface BatchContext {
  /** The notifications the handlers write are leased to this worker's delivery loop through this, as far as it has room. */
  handOff?: HandOff | undefined;
  /** Traces on: one span per request of the batch (batch-trace.ts); undefined while off. */
  trace?: BatchTrace | undefined;
}

/**
 * A handler whose whole effect is database writes. The worker runs a batch of its jobs in ONE
 * transaction, together with the lease check and the jobs' completion: the effects happen
 * exactly once (a crash before commit redoes them all, after commit never). If the batch throws,
 * each job is retried alone so one bad job cannot hold back the others.
 */
interface TransactionalJobHandler {
  handle(tx: Tx, jobs: ClaimedJob[], ctx: JobContext, batch: BatchContext): Promise<void>;
  /** Runs in the transaction that marks the job failed after its last attempt. */
  onExhausted?(tx: Tx, job: ClaimedJob, error: unknown, ctx: JobContext): Promise<void>;
}

/** Job kind → handler. */
export type JobHandlers = Record<string, TransactionalJobHandler>;
