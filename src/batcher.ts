/**
 * The one batching primitive: callers submit items one at a time and get their own result; the
 * items that arrive together are run as one batch (one query, one commit). Used where one round
 * trip or one fsync per item was the cost that mattered:
 *
 * | batcher | gathers | batch | why (docs/benchmarks.md has the figures) |
 * |---|---|---|---|
 * | `RequestIngestWriter` (POST /requests) | this turn of the event loop | ≤ 1,000 requests, one commit | an fsync per request capped ingest at the disk's fsync rate on SQLite |
 * | `AttemptLogWriter` (delivery outcomes) | 5 ms | ≤ 256 attempts, one commit | a commit per delivery capped delivery at the commit rate |
 * | `NotificationLoader` (delivery reads) | the current microtask queue | a claim's deliveries, one query | one read per claim instead of one per delivery |
 *
 * Batches run one after another: what arrives while one runs waits for it and goes into the next,
 * so batches grow with load and nothing waits when there is none. With `isolateFailures`, a batch
 * that fails for a reason one item may have caused is run again one item at a time, so one bad item
 * fails alone and its neighbours do not; a failure no item caused (the database cannot serve) fails
 * the whole batch at once, instead of once per item.
 */
export interface BatcherOptions<In, Out> {
  /** When a batch is cut after its first item arrives: `microtask`, `immediate` (setImmediate) or milliseconds. */
  gather: 'microtask' | 'immediate' | number;
  maxBatch: number;
  /** Runs one batch; one result per item, in order. */
  run(items: In[]): Promise<Out[]>;
  /** Whether a batch that failed with `error` is run again one item at a time (false: every item fails with it). */
  isolateFailures?: (error: unknown) => boolean;
}

interface Waiting<In, Out> {
  item: In;
  resolve(result: Out): void;
  reject(error: unknown): void;
}

export class Batcher<In, Out> {
  #queue: Waiting<In, Out>[] = [];
  #draining: Promise<void> | undefined;
  #runningSince: number | undefined;

  constructor(private readonly options: BatcherOptions<In, Out>) {}

  submit(item: In): Promise<Out> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ item, resolve, reject });
      this.#draining ??= this.#gather().then(() => this.#drain());
    });
  }

  /** When the batch running now began (Date.now), undefined while none runs (liveness). */
  busySince(): number | undefined {
    return this.#runningSince;
  }

  /** Resolves once everything submitted so far has run. */
  async flush(): Promise<void> {
    while (this.#draining) await this.#draining;
  }

  #gather(): Promise<void> {
    const { gather } = this.options;
    if (gather === 'microtask') return Promise.resolve();
    return new Promise((resolve) => (gather === 'immediate' ? setImmediate(resolve) : setTimeout(resolve, gather)));
  }

  async #drain(): Promise<void> {
    try {
      while (this.#queue.length > 0) await this.#runBatch(this.#queue.splice(0, this.options.maxBatch));
    } finally {
      this.#draining = undefined;
    }
  }

  async #runBatch(batch: Waiting<In, Out>[]): Promise<void> {
    this.#runningSince = Date.now();
    try {
      const results = await this.options.run(batch.map((waiting) => waiting.item));
      batch.forEach((waiting, i) => waiting.resolve(results[i]!));
    } catch (error) {
      if (batch.length > 1 && this.options.isolateFailures?.(error)) {
        for (const waiting of batch) await this.#runBatch([waiting]);
        return;
      }
      for (const waiting of batch) waiting.reject(error);
    } finally {
      this.#runningSince = undefined;
    }
  }
}
