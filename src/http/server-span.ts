import type { FastifyReply, FastifyRequest } from 'fastify';
import type { TraceSpan, Tracing } from '../tracing.js';

/**
 * The server span of a traced route (docs/deployment.md, "Traces"): child of the caller's W3C
 * `traceparent` when it sent a valid one, else the first span of a new trace. The handler starts
 * it (back-dated to the request's arrival, so authentication and validation count) and hands its
 * `traceParent` to the work it stores; the route's `onResponse` hook ends it with the status.
 * Only a route whose handler ran has one: a call refused by authentication or validation is not
 * traced.
 */
export interface ServerSpans {
  start(request: FastifyRequest, reply: FastifyReply): TraceSpan;
  /** For the route's options: ends the span with the answer's status. */
  onResponse: (request: FastifyRequest, reply: FastifyReply, done: () => void) => void;
}

const header = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value);

export function serverSpans(tracing: Tracing): ServerSpans {
  const spans = new WeakMap<FastifyRequest, TraceSpan>();
  return {
    start(request, reply) {
      const route = request.routeOptions.url ?? request.url.split('?')[0]!;
      const span = tracing.startSpan(`${request.method} ${route}`, {
        kind: 'server',
        parent: header(request.headers.traceparent),
        traceState: header(request.headers.tracestate),
        startTime: Date.now() - reply.elapsedTime,
        attributes: { 'http.request.method': request.method, 'http.route': route, 'url.path': request.url.split('?')[0]!, 'url.scheme': request.protocol },
      });
      spans.set(request, span);
      return span;
    },
    onResponse(request, reply, done) {
      const span = spans.get(request);
      if (span) {
        spans.delete(request);
        span.setAttributes({ 'http.response.status_code': reply.statusCode });
        // A server span fails on 5xx only: a 4xx is the caller's mistake, answered as designed.
        if (reply.statusCode >= 500) span.fail(`answered ${reply.statusCode}`, String(reply.statusCode));
        span.end();
      }
      done();
    },
  };
}
