import { Batcher } from '../batcher.js';
import { isDatabaseUnavailable } from './database-errors.js';
import type { Db, Executor } from './database.js';
import { enqueueJobs, notifyOtherProcesses, type JobSignals } from './queue/index.js';
import { claimIdempotencyKeys } from './repositories/idempotency-keys.js';
import { insertRequestRows } from './repositories/requests.js';
import type { IdempotencyKeysTable, RequestsTable } from './tables/index.js';
import { REGISTER_REQUEST_JOB, registerRequestJob } from '../domain/requests/job-kinds.js';

/** One accepted POST /requests: the row, and the response to keep under its Idempotency-Key. */
export interface IngestItem {
  row: RequestsTable;
  idempotency?: IdempotencyKeysTable;
  /** Traces on: the API call's span, which the registration job carries (its `traceparent`). */
  traceParent?: string | undefined;
}

/** `key-taken`: another writer stored a response under the same key first; replay that one. */
export type IngestResult = 'stored' | 'key-taken';

/**
 * Group commit for the ingest path (a Batcher). With synchronous=FULL every SQLite commit fsyncs
 * (so commits per second are bounded by the disk), so requests arriving while a
 * commit is in flight wait and are written together by the next one, with their registration
 * jobs, in a single transaction. Each POST is answered 202 only after the commit that holds it.
 * Under light load a batch is one request and adds no delay; under heavy load batches grow on
 * their own. One bad row (its account deleted meanwhile, say) fails alone.
 */
export class RequestIngestWriter {
  readonly #batcher: Batcher<IngestItem, IngestResult>;

  constructor(db: Db, signals: JobSignals, options: { maxBatch?: number; clock?: () => number } = {}) {
    this.#batcher = new Batcher({
      // setImmediate lets the requests already parsed in this turn of the event loop join the batch.
      gather: 'immediate',
      maxBatch: options.maxBatch ?? 1000,
      isolateFailures: (error) => !isDatabaseUnavailable(error),
      run: async (items) => {
        const results = await db.transaction().execute((tx) => writeItems(tx, items, options.clock?.() ?? Date.now()));
        signals.enqueued([REGISTER_REQUEST_JOB]);
        return results;
      },
    });
  }

  submit(item: IngestItem): Promise<IngestResult> {
    return this.#batcher.submit(item);
  }

  /** When the commit in progress began, undefined while none runs (liveness). */
  busySince(): number | undefined {
    return this.#batcher.busySince();
  }

  /** Resolves once everything submitted so far is written. */
  flush(): Promise<void> {
    return this.#batcher.flush();
  }
}

/** Stores requests and their registration jobs; items whose key another writer holds are skipped. */
async function writeItems(tx: Executor, items: IngestItem[], now: number): Promise<IngestResult[]> {
  // The same key twice in one batch: only the first may claim it (one statement cannot upsert a row twice).
  const keyOf = (row: IdempotencyKeysTable) => `${row.account_id}\u0000${row.key}`;
  const firstWithKey = new Map<string, IngestItem>();
  for (const item of items) if (item.idempotency && !firstWithKey.has(keyOf(item.idempotency))) firstWithKey.set(keyOf(item.idempotency), item);
  const owned = await claimIdempotencyKeys(
    tx,
    [...firstWithKey.values()].map((item) => item.idempotency!),
    now,
  );
  const results = items.map((item): IngestResult => (!item.idempotency || (firstWithKey.get(keyOf(item.idempotency)) === item && owned.has(keyOf(item.idempotency))) ? 'stored' : 'key-taken'));
  const stored = items.filter((_, i) => results[i] === 'stored');
  const rows = stored.map((item) => item.row);
  // 18 columns × 1000 rows stays under both databases' bound-parameter limits.
  await insertRequestRows(tx, rows);
  await enqueueJobs(
    tx,
    stored.map((item) => registerRequestJob(item.row.id, item.traceParent)),
    { now },
  );
  if (rows.length > 0) await notifyOtherProcesses(tx, [REGISTER_REQUEST_JOB]);
  return results;
}
