import type { Logger } from '../logger.js';
import type { QueueMetrics } from '../metrics.js';
import type { Wakeup } from './wakeup.js';

/**
 * One worker loop, as a small state machine. Each turn runs `step` (claim or take jobs and start
 * them), which returns how many jobs it got, then:
 * - got none → **idle**: wait for a wake-up or, failing one, the poll (`pollMs`, the safety net);
 * - got fewer than a full batch, with `gatherMs` → **gathering**: pause so the next batch is
 *   bigger. Waking on every ingest commit gave batches of a few jobs, each paying a commit and ~8
 *   round trips behind the busy HTTP side, and processing on PostgreSQL fell far behind ingest;
 * - otherwise → **working**: yield one turn of the event loop (setImmediate) and go on; the HTTP
 *   side shares the event loop and, on SQLite, the one connection.
 * It ends when `stopping()` says so; a step that throws is logged and counts as getting none.
 */
export interface LoopSpec {
  name: string;
  step: () => Promise<number>;
  wake: Wakeup;
  pollMs: number;
  /** Batch size of a full step (only the gathering decision uses it). */
  batchSize: number;
  gatherMs: number;
  stopping: () => boolean;
  log: Logger;
  metrics: QueueMetrics;
  /** Told of a step that threw (readiness: the database may be refusing writes). */
  onError?: (error: unknown) => void;
  /** Liveness: told when each step begins, so that a step that never ends is seen (src/liveness.ts). */
  watch?: (busySince: () => number | undefined) => () => void;
}

export async function runLoop(spec: LoopSpec): Promise<void> {
  let stepStartedAt: number | undefined;
  const unwatch = spec.watch?.(() => stepStartedAt);
  try {
    while (!spec.stopping()) {
      let got = 0;
      stepStartedAt = Date.now();
      try {
        got = await spec.step();
      } catch (error) {
        spec.onError?.(error);
        spec.log.error({ err: error, loop: spec.name }, 'job loop step failed');
      } finally {
        stepStartedAt = undefined;
      }
      if (spec.stopping()) break;
      if (got === 0) {
        if (!(await spec.wake.wait(spec.pollMs))) spec.metrics.wakeups.inc({ source: 'poll' });
      } else if (got < spec.batchSize && spec.gatherMs > 0) {
        await new Promise((resolve) => setTimeout(resolve, spec.gatherMs));
      } else {
        await new Promise((resolve) => setImmediate(resolve));
      }
    }
  } finally {
    unwatch?.();
  }
}
