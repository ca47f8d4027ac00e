/** The kinds of the jobs enqueued, or undefined when unknown (wake every loop). */
export type JobsEnqueuedListener = (kinds?: readonly string[]) => void;

/**
 * The in-process wake-up of the job worker: whoever commits a transaction that enqueued jobs
 * calls `enqueued(kinds)` after the commit, and the worker loops that run those kinds wake at
 * once instead of at their next poll. One per process, built in the composition root (deps.ts).
 */
export class JobSignals {
  readonly #listeners = new Set<JobsEnqueuedListener>();

  onEnqueued(listener: JobsEnqueuedListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  enqueued(kinds?: readonly string[]): void {
    for (const listener of this.#listeners) listener(kinds);
  }
}
