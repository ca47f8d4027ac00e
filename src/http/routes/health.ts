import type { TypedApp } from '../typed-app.js';
import { Type } from 'typebox';
import type { DatabaseReadiness } from '../../services/database-readiness.js';
import { unavailable } from '../../domain/errors.js';
import { sendError } from '../plugins/errors.js';

const Status = Type.Object({ status: Type.String() }, { title: 'HealthStatus', examples: [{ status: 'ok' }] });

/** Liveness says the process answers; readiness says its database takes writes (services/database-readiness.ts). */
export async function healthRoutes(app: TypedApp, deps: { readiness: Pick<DatabaseReadiness, 'check'> }): Promise<void> {
  app.get(
    '/health/live',
    {
      schema: {
        tags: ['operations'],
        operationId: 'getLiveness',
        description: 'Answers 200 `{"status":"ok"}` while the process runs; it does not touch the database. Public: restrict it at the network edge.',
        summary: 'Liveness: the process answers',
        response: { 200: Status },
      },
      logLevel: 'warn',
    },
    async () => ({ status: 'ok' }),
  );
  app.get(
    '/health/ready',
    {
      schema: {
        tags: ['operations'],
        operationId: 'getReadiness',
        description:
          'Answers 200 when the database takes writes: a probe write (at most once a second, shared by every caller) succeeds and no write was refused for lack of the database (disk full, read-only, unreachable) in the last 10 s. ' +
          'Otherwise 503 with the reason in `detail` (take the instance out of rotation); it comes back by itself. Public.',
        summary: 'Readiness: the database takes writes',
        response: { 200: Status },
      },
      logLevel: 'warn',
    },
    async (_request, reply) => {
      const state = await deps.readiness.check();
      // Answered here, not thrown: the error handler would log every 503 a load balancer asks for (the change is logged once).
      if (!state.ready) return sendError(reply, unavailable(`not ready: ${state.reason}`));
      return { status: 'ok' };
    },
  );
}
