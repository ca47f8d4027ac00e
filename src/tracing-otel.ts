import { defaultTextMapGetter, ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags, type Span } from '@opentelemetry/api';
import { setGlobalErrorHandler, W3CTraceContextPropagator } from '@opentelemetry/core';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import { AlwaysOffSampler, AlwaysOnSampler, BasicTracerProvider, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler, type Sampler } from '@opentelemetry/sdk-trace-base';
import type { TracingConfig } from './config.js';
import type { Logger } from './logger.js';
import type { SpanAttributes, SpanOptions, TraceSpan, Tracing } from './trace-span.js';

/**
 * The OpenTelemetry SDK behind tracing.ts, imported only when traces are on. A tracer provider of
 * its own (not registered globally: no other library's spans join in), spans exported in batches
 * over OTLP/HTTP (protobuf or JSON). Contexts are passed explicitly, as W3C `traceparent` strings,
 * so no context manager runs on the hot paths.
 */

const KINDS = { server: SpanKind.SERVER, client: SpanKind.CLIENT, internal: SpanKind.INTERNAL } as const;

/** A failed export is logged at most this often: a collector that is down must not flood the log. */
const EXPORT_ERROR_LOG_INTERVAL_MS = 60_000;
/** Shutdown waits this long for the last export, then lets the process end. */
const SHUTDOWN_BOUND_MS = 5_000;

function samplerOf(config: TracingConfig): Sampler {
  const name = config.sampler.replace(/^parentbased_/, '');
  const root = name === 'always_off' ? new AlwaysOffSampler() : name === 'traceidratio' ? new TraceIdRatioBasedSampler(config.samplerRatio) : new AlwaysOnSampler();
  return config.sampler.startsWith('parentbased_') ? new ParentBasedSampler({ root }) : root;
}

class OtelSpan implements TraceSpan {
  constructor(private readonly span: Span) {}

  get traceParent(): string {
    const { traceId, spanId, traceFlags } = this.span.spanContext();
    return `00-${traceId}-${spanId}-${traceFlags & TraceFlags.SAMPLED ? '01' : '00'}`;
  }

  setAttributes(attributes: SpanAttributes): void {
    this.span.setAttributes(attributes);
  }

  fail(description: string, errorType: string): void {
    this.span.setAttribute('error.type', errorType);
    this.span.setStatus({ code: SpanStatusCode.ERROR, message: description.slice(0, 256) });
  }

  end(): void {
    this.span.end();
  }
}

export async function createTracing(config: TracingConfig & { url: string }, log: Logger): Promise<Tracing> {
  const { OTLPTraceExporter } = config.protocol === 'http/json' ? await import('@opentelemetry/exporter-trace-otlp-http') : await import('@opentelemetry/exporter-trace-otlp-proto');
  const exporter = new OTLPTraceExporter({ url: config.url, headers: config.headers });
  const provider = new BasicTracerProvider({
    resource: defaultResource().merge(resourceFromAttributes({ 'service.name': config.serviceName })),
    sampler: samplerOf(config),
    spanProcessors: [new BatchSpanProcessor(exporter)],
  });
  const tracer = provider.getTracer('rewards');
  const propagator = new W3CTraceContextPropagator();
  const where = new URL(config.url).host;

  // The SDK reports failed exports to its global error handler (by default a no-op logger).
  let lastLogged = -Infinity;
  let unlogged = 0;
  setGlobalErrorHandler((error) => {
    const now = performance.now();
    if (now - lastLogged < EXPORT_ERROR_LOG_INTERVAL_MS) {
      unlogged += 1;
      return;
    }
    log.warn({ err: error, collector: where, failuresNotLogged: unlogged }, 'traces could not be exported: the spans of that batch are lost (logged at most once a minute)');
    lastLogged = now;
    unlogged = 0;
  });

  return {
    startSpan(name: string, options: SpanOptions): TraceSpan {
      const parent =
        options.parent === undefined
          ? ROOT_CONTEXT
          : propagator.extract(ROOT_CONTEXT, { traceparent: options.parent, ...(options.traceState ? { tracestate: options.traceState } : {}) }, defaultTextMapGetter);
      const span = tracer.startSpan(
        name,
        { kind: KINDS[options.kind], ...(options.attributes ? { attributes: options.attributes } : {}), ...(options.startTime ? { startTime: options.startTime } : {}) },
        parent,
      );
      return new OtelSpan(span);
    },
    async flush() {
      await provider.forceFlush();
    },
    async shutdown() {
      let timer: NodeJS.Timeout | undefined;
      // A collector that cannot be reached must not hold up or fail the service's stop.
      const last = provider.shutdown().catch((error: unknown) => log.warn({ err: error, collector: where }, 'the last traces could not be exported'));
      await Promise.race([last, new Promise((resolve) => (timer = setTimeout(resolve, SHUTDOWN_BOUND_MS)))]).finally(() => clearTimeout(timer));
    },
  };
}
