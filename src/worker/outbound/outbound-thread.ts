import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { createOutbound } from './create-outbound.js';
import type { OutboundConfig, TlsMaterial } from './outbound-config.js';
import type { ConcurrencyLimits } from './concurrency-limiter.js';
import type { AttemptResult, DeliveryAttemptInput } from './deliver.js';

/** The outbound thread's side of threaded-outbound.ts: runs the calls it is sent, answers in batches. */

export interface OutboundThreadData {
  config: OutboundConfig;
  limits?: ConcurrencyLimits;
  tls: TlsMaterial;
}

export type ToOutboundThread = { calls: Array<[id: number, input: DeliveryAttemptInput]> } | { close: true };
export type FromOutboundThread = { results: Array<[id: number, result: AttemptResult]> } | { closed: true };

/** The thread's whole state lives in this call: the calls in flight and the answers not yet sent. */
function serve(port: MessagePort, { config, limits, tls }: OutboundThreadData): void {
  const outbound = createOutbound(config, { ...(limits ? { limits } : {}), tls });

  let finished: Array<[number, AttemptResult]> = [];
  const send = (message: FromOutboundThread) => port.postMessage(message);
  const flush = () => {
    const results = finished;
    finished = [];
    send({ results });
  };

  port.on('message', (message: ToOutboundThread) => {
    if ('close' in message) {
      void outbound.close().then(() => send({ closed: true }));
      return;
    }
    for (const [id, input] of message.calls) {
      void outbound
        .deliverAttempt(input)
        .catch((error: unknown): AttemptResult => ({ ok: false, latencyMs: 0, error: `delivery failed: ${(error as Error)?.message ?? String(error)}` }))
        .then((result) => {
          // Answers finishing in the same turn of the event loop travel in one message.
          if (finished.length === 0) setImmediate(flush);
          finished.push([id, result]);
        });
    }
  });
}

serve(parentPort!, workerData as OutboundThreadData);
