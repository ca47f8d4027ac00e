import { Worker } from 'node:worker_threads';
import type { Logger } from '../../logger.js';
import type { ConcurrencyLimits } from './concurrency-limiter.js';
import { loadTlsMaterial, outboundConfigOf, type OutboundConfig, type OutboundDelivery } from './outbound-config.js';
import type { AttemptResult, DeliveryAttemptInput } from './deliver.js';
import type { FromOutboundThread, OutboundThreadData, ToOutboundThread } from './outbound-thread.js';

/**
 * Outbound delivery in a worker thread of its own: signing, authentication, the HTTP calls and the
 * concurrency limits run there, the job worker's database work stays on the main thread.
 *
 * Why: on SQLite every commit blocks the main thread's event loop (and an fsync can take a
 * millisecond), which held up every call in flight; and one thread doing both the bookkeeping
 * and the calls, comparable shares of a delivery's CPU, was the delivery throughput's ceiling. With
 * the calls here they go on during commits, their timeouts are measured without the main thread's
 * pauses, and the two halves run on two cores (`npm run bench -- --only delivery`;
 * docs/benchmarks.md, "Tried and did not pay", has the variant without the thread).
 *
 * Calls and answers travel in batches, one message per turn of either event loop. The thread starts
 * on the first call (an API-only process never starts it). If it dies, the calls it held fail (the
 * job worker retries them like any failed attempt) and the next call starts a new one.
 */
/**
 * The thread's heap. Left to V8's default its young generation grows under load until a worker
 * process delivering a large batch goes past its memory budget (docs/deployment.md); capped small
 * it stays within it, at the price of more frequent scavenges and so somewhat fewer deliveries a
 * second: memory is the budget that must hold (`npm run bench -- --only backlog` reports the
 * worker's peak RSS; docs/benchmarks.md). The old generation cap is a safety net: calls in flight
 * are small, and a thread that runs out of heap fails its calls and is replaced.
 */
const THREAD_LIMITS = { maxYoungGenerationSizeMb: 4, maxOldGenerationSizeMb: 128 };

export interface ThreadedOutbound extends OutboundDelivery {
  /** The running thread, if one was started (tests and diagnostics). */
  readonly thread: Worker | undefined;
}

export function createThreadedOutbound(config: OutboundConfig, options: { limits?: ConcurrencyLimits; log?: Logger } = {}): ThreadedOutbound {
  // Read (and check) the certificate files now, so that a bad path stops the start as before. The
  // thread gets the outbound settings (the egress proxy's among them), not the whole configuration.
  const data: OutboundThreadData = { config: outboundConfigOf(config), tls: loadTlsMaterial(config), ...(options.limits ? { limits: options.limits } : {}) };
  let thread: Worker | undefined;
  let nextId = 0;
  const pending = new Map<number, (result: AttemptResult) => void>();
  let queued: Array<[number, DeliveryAttemptInput]> = [];
  let closing: Promise<void> | undefined;

  const post = (message: ToOutboundThread) => thread!.postMessage(message);
  const failAll = (reason: string) => {
    for (const resolve of pending.values()) resolve({ ok: false, latencyMs: 0, error: reason });
    pending.clear();
  };

  function start(): Worker {
    const worker = new Worker(new URL('./outbound-thread.mjs', import.meta.url), { workerData: data, resourceLimits: THREAD_LIMITS });
    worker.on('message', (message: FromOutboundThread) => {
      if (!('results' in message)) return;
      for (const [id, result] of message.results) {
        pending.get(id)?.(result);
        pending.delete(id);
      }
    });
    worker.on('error', (error) => options.log?.error({ err: error }, 'outbound thread failed'));
    worker.on('exit', (code) => {
      if (thread === worker) thread = undefined;
      if (pending.size > 0) failAll(`the outbound thread stopped (exit code ${code}) during the call`);
    });
    return worker;
  }

  function flush(): void {
    const calls = queued;
    queued = [];
    thread ??= start();
    post({ calls });
  }

  return {
    get thread() {
      return thread;
    },
    deliverAttempt(input) {
      if (closing) return Promise.resolve({ ok: false, latencyMs: 0, error: 'the service is shutting down' });
      return new Promise((resolve) => {
        const id = nextId++;
        pending.set(id, resolve);
        // Calls started in the same turn of the event loop travel in one message.
        if (queued.length === 0) setImmediate(flush);
        queued.push([id, input]);
      });
    },
    close() {
      closing ??= (async () => {
        while (pending.size > 0) await new Promise((resolve) => setTimeout(resolve, 10));
        const worker = thread;
        if (!worker) return;
        await new Promise<void>((resolve) => {
          worker.on('message', (message: FromOutboundThread) => 'closed' in message && resolve());
          worker.once('exit', () => resolve());
          post({ close: true });
        });
        await worker.terminate();
      })();
      return closing;
    },
  };
}
