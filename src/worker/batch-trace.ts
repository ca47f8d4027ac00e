import type { SpanAttributes, TraceSpan, Tracing } from '../tracing.js';

/**
 * Traces on (docs/deployment.md, "Traces"): the spans of one transactional batch, one per request
 * it works on, each the child of the context the request's job carries. A batch of many requests
 * so still gives each request its own trace. What the batch writes for a request (its next job,
 * its notifications) carries that request's span as its parent (`traceParentOf`). The spans end
 * with the batch's transaction: committed, or failed with it (its jobs are then run again, each
 * with a span of its own).
 */
export class BatchTrace {
  readonly #tracing: Tracing;
  readonly #spans = new Map<string, TraceSpan>();

  constructor(tracing: Tracing) {
    this.#tracing = tracing;
  }

  /** Starts the span of the batch's work on `requestId`, under `parent` (the `traceparent` its job carries). */
  start(requestId: string, name: string, parent: string | undefined, attributes: SpanAttributes): void {
    this.#spans.get(requestId)?.end();
    this.#spans.set(requestId, this.#tracing.startSpan(name, { kind: 'internal', parent, attributes }));
  }

  setAttributes(requestId: string, attributes: SpanAttributes): void {
    this.#spans.get(requestId)?.setAttributes(attributes);
  }

  /** The `traceparent` for what the batch writes for `requestId`: its span's. */
  traceParentOf(requestId: string): string | undefined {
    return this.#spans.get(requestId)?.traceParent;
  }

  /** After the transaction: every span ends, failed if the transaction did not commit. */
  end(failure?: { error: unknown }): void {
    for (const span of this.#spans.values()) {
      if (failure) {
        const { error } = failure;
        const code = (error as { code?: unknown } | null)?.code;
        span.fail('the batch rolled back; its jobs run again', typeof code === 'string' ? code : error instanceof Error ? error.name : 'Error');
      }
      span.end();
    }
    this.#spans.clear();
  }
}
