import type { Db, Executor } from './database.js';
import { enqueueJobs, signalJobsEnqueued } from './queue/index.js';
import { claimIdempotencyKeys } from './repositories/idempotency-keys.js';
import { insertRequestRows } from './repositories/requests.js';
import type { IdempotencyKeysTable, RequestsTable } from './tables/index.js';
import { REGISTER_REQUEST_JOB, registerRequestJob } from '../domain/requests/job-kinds.js';

/** One accepted POST /requests: the row, and the response to keep under its Idempotency-Key. */
export interface IngestItem {
  row: RequestsTable;
  idempotency?: IdempotencyKeysTable;
}

/** `key-taken`: another writer stored a response under the same key first; replay that one. */
export type IngestResult = 'stored' | 'key-taken';

interface Pending {
  item: IngestItem;
  resolve(result: IngestResult): void;
  reject(error: unknown): void;
}

/**
 * Group commit for the ingest path. With synchronous=FULL every SQLite commit fsyncs (~0.5 ms on
 * the benchmark machine, i.e. ~2,000 commits/s at best), so requests arriving while a commit is
 * in flight wait and are written together by the next one, with their registration jobs, in a
 * single transaction. Each POST is answered 202 only after the commit that holds it. Under light
 * load a batch is one request and adds no delay; under heavy load batches grow on their own.
 */
export class RequestIngestWriter {
  private queue: Pending[] = [];
  private flushing: Promise<void> | undefined;

  constructor(
    private readonly db: Db,
    private readonly options: { maxBatch?: number; clock?: () => number } = {},
  ) {}

  submit(item: IngestItem): Promise<IngestResult> {
    return new Promise((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      // setImmediate lets the requests already parsed in this turn of the event loop join the batch.
      if (!this.flushing) this.flushing = new Promise((done) => setImmediate(() => this.drain().finally(done)));
    });
  }

  /** Resolves once everything submitted so far is written. */
  async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
  }

  private async drain(): Promise<void> {
    try {
      const maxBatch = this.options.maxBatch ?? 1000;
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, maxBatch);
        await this.writeBatch(batch);
      }
    } finally {
      this.flushing = undefined;
    }
  }

  private async writeBatch(batch: Pending[]): Promise<void> {
    try {
      const results = await this.db.transaction().execute((tx) => writeItems(tx, batch.map((p) => p.item), this.options.clock?.() ?? Date.now()));
      signalJobsEnqueued(this.db, [REGISTER_REQUEST_JOB]);
      batch.forEach((pending, i) => pending.resolve(results[i]!));
    } catch (error) {
      if (batch.length === 1) return batch[0]!.reject(error);
      // One bad row (its account deleted meanwhile, say) must not fail its neighbours: write each alone.
      for (const pending of batch) await this.writeBatch([pending]);
    }
  }
}

/** Stores requests and their registration jobs; items whose key another writer holds are skipped. */
async function writeItems(tx: Executor, items: IngestItem[], now: number): Promise<IngestResult[]> {
  // The same key twice in one batch: only the first may claim it (one statement cannot upsert a row twice).
  const keyOf = (row: IdempotencyKeysTable) => `${row.account_id}\u0000${row.key}`;
  const firstWithKey = new Map<string, IngestItem>();
  for (const item of items) if (item.idempotency && !firstWithKey.has(keyOf(item.idempotency))) firstWithKey.set(keyOf(item.idempotency), item);
  const owned = await claimIdempotencyKeys(tx, [...firstWithKey.values()].map((item) => item.idempotency!), now);
  const results = items.map((item): IngestResult =>
    !item.idempotency || (firstWithKey.get(keyOf(item.idempotency)) === item && owned.has(keyOf(item.idempotency))) ? 'stored' : 'key-taken',
  );
  const rows = items.filter((_, i) => results[i] === 'stored').map((item) => item.row);
  // 18 columns × 1000 rows stays under both databases' bound-parameter limits.
  await insertRequestRows(tx, rows);
  await enqueueJobs(tx, rows.map((row) => registerRequestJob(row.id)), { now });
  return results;
}
