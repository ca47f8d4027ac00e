import { tracesUrl, type TracingConfig } from './config.js';
import type { Logger } from './logger.js';
import type { Tracing } from './trace-span.js';

export type { SpanAttributes, TraceSpan, Tracing } from './trace-span.js';

/**
 * Traces of a reward request's path (docs/deployment.md, "Traces"): the API call, its registration
 * and processing, each delivery attempt, one trace per request across processes. The context
 * travels with the stored work as a W3C `traceparent` (the request jobs' payloads, the notification
 * rows' `trace_parent`).
 *
 * Off (the default: no OTLP endpoint), `startTracing` answers undefined without importing anything:
 * the OpenTelemetry SDK and its exporter are loaded by tracing-otel.ts, which only the dynamic
 * import below reaches. Every caller holds a `Tracing | undefined`, and its hot paths pay one
 * `if` on it and store nothing.
 */

/** Traces when the OTEL_* settings name an endpoint; otherwise undefined, and no OpenTelemetry SDK module is loaded. */
export async function startTracing(config: TracingConfig, log: Logger): Promise<Tracing | undefined> {
  const url = tracesUrl(config);
  if (url === undefined) return undefined;
  const { createTracing } = await import('./tracing-otel.js');
  return createTracing({ ...config, url }, log);
}
