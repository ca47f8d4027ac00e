import type { TypedApp } from '../typed-app.js';
import type { Metrics } from '../../metrics.js';

/** Prometheus exposition. Public like the health checks: restrict it at the network edge. */
export async function metricsRoute(app: TypedApp, deps: { metrics: Metrics }): Promise<void> {
  app.get(
    '/metrics',
    {
      schema: {
        tags: ['operations'],
        operationId: 'getMetrics',
        description: 'Prometheus text exposition of the API and worker metrics (docs/notifications.md, "Metrics"). Public: restrict it at the network edge.',
        summary: 'Prometheus metrics',
        response: { 200: { description: 'the Prometheus text exposition', content: { 'text/plain': { schema: { type: 'string' } } } } },
      },
      logLevel: 'warn',
    },
    async (_request, reply) => {
      reply.type(deps.metrics.registry.contentType);
      return deps.metrics.registry.metrics();
    },
  );
}
