import type { Logger } from '../logger.js';
import type { Db, Tx } from '../storage/database.js';
import type { ClaimedJob, LeaseOffer, StandaloneQueue } from '../storage/queue/index.js';

/** What a handler may use besides its transaction. */
export interface JobContext {
  db: Db;
  log: Logger;
  clock: () => number;
  workerId: string;
}

/** What a transactional batch offers its handlers. */
export interface BatchContext {
  /** Jobs the handlers enqueue for this worker's delivery loop are leased to it through this offer. */
  leaseTo?: LeaseOffer | undefined;
}

/**
 * A handler whose whole effect is database writes. The worker runs a batch of its jobs in ONE
 * transaction, together with the lease check and the jobs' completion: the effects happen
 * exactly once (a crash before commit redoes them all, after commit never). If the batch throws,
 * each job is retried alone so one bad job cannot hold back the others.
 */
export interface TransactionalJobHandler {
  mode: 'transactional';
  handle(tx: Tx, jobs: ClaimedJob[], ctx: JobContext, batch: BatchContext): Promise<void>;
  /** Runs in the transaction that marks the job failed after its last attempt. */
  onExhausted?(tx: Tx, job: ClaimedJob, error: unknown, ctx: JobContext): Promise<void>;
}

/** Given to each standalone job. */
export interface StandaloneJobControl {
  /**
   * The job's external work (its HTTP call) is over and only its bookkeeping is left: its
   * concurrency slot goes to the next job now instead of when the outcome is committed.
   */
  externalWorkDone(): void;
}

/**
 * A handler with effects outside the database (an HTTP call): it runs alone, outside any
 * transaction, with up to `concurrency` jobs in flight. It may settle its job itself, under its
 * lease, in its queue (`queue`: a delivery's outcome is written by the attempt log); if it returns
 * without doing so the worker ends the job (`StandaloneQueue.end`), and if it throws the worker
 * records a failed run (`StandaloneQueue.fail`).
 */
export interface StandaloneJobHandler {
  mode: 'standalone';
  /** Where its jobs live (default: the jobs table). Every standalone kind of a worker shares one. */
  queue?: StandaloneQueue;
  /** Resolves 'settled' when the handler completed or rescheduled the job itself. */
  handle(job: ClaimedJob, ctx: JobContext, control: StandaloneJobControl): Promise<void | 'settled'>;
  onExhausted?(tx: Tx, job: ClaimedJob, error: unknown, ctx: JobContext): Promise<void>;
}

type JobHandler = TransactionalJobHandler | StandaloneJobHandler;

/** Job kind → handler. */
export type JobHandlers = Record<string, JobHandler>;
