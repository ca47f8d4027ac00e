/** What the traced paths use of a span (tracing.ts starts the SDK behind it, tracing-otel.ts is that SDK). */

/** A span's attributes: never a credential, a header value, a secret or a payload. */
export type SpanAttributes = Record<string, string | number | boolean>;

/** A started span; ended once. */
export interface TraceSpan {
  /** Its context as a W3C `traceparent`: what the work it leads to carries (a job's payload, a notification row). */
  readonly traceParent: string;
  setAttributes(attributes: SpanAttributes): void;
  /** Status ERROR with `description` (no secret, header value or payload in it), and `error.type`. */
  fail(description: string, errorType: string): void;
  end(): void;
}

export interface SpanOptions {
  kind: 'server' | 'client' | 'internal';
  /** The parent's W3C `traceparent` (the caller's, or the one stored with the work); absent or not valid, the span begins a trace. */
  parent?: string | undefined;
  /** The caller's `tracestate`, beside its `traceparent`. */
  traceState?: string | undefined;
  attributes?: SpanAttributes;
  /** When it began (epoch ms), when that was before now. */
  startTime?: number;
}

export interface Tracing {
  startSpan(name: string, options: SpanOptions): TraceSpan;
  /** Exports the spans that have ended (shutdown does too). */
  flush(): Promise<void>;
  /** Exports what is left, within a few seconds, and stops. */
  shutdown(): Promise<void>;
}
