import type { TypedApp } from '../typed-app.js';
import { Type } from 'typebox';
import type { DatabaseReadiness } from '../../services/database-readiness.js';
import type { Liveness } from '../../liveness.js';
import { unavailable } from '../../domain/errors.js';
import { sendError } from '../plugins/errors.js';

const Status = Type.Object({ status: Type.String() }, { title: 'HealthStatus', examples: [{ status: 'ok' }] });

/**
 * Liveness says the process makes progress (src/liveness.ts): an orchestrator restarts it when it
 * fails. Readiness says its database takes writes (services/database-readiness.ts): a load
 * balancer sends it no traffic while it fails, and nothing restarts it (docs/deployment.md, "Probes").
 */
export async function healthRoutes(app: TypedApp, deps: { readiness: Pick<DatabaseReadiness, 'check'>; liveness: Pick<Liveness, 'check'> }): Promise<void> {
  app.get(
    '/health/live',
    {
      schema: {
        tags: ['operations'],
        operationId: 'getLiveness',
        description:
          'Answers 200 `{"status":"ok"}` while the process makes progress: no worker loop step and no commit of accepted requests has run longer than LIVENESS_TIMEOUT (every wait on the database is bounded far below it). ' +
          'Otherwise 503 with the reason in `detail`: the process is stuck and only a restart brings it back. It does not touch the database: a database that does not answer is for readiness to report. Public: restrict it at the network edge.',
        summary: 'Liveness: the process makes progress',
        response: { 200: Status },
      },
      config: { problems: { 503: 'the process is stuck (a step past LIVENESS_TIMEOUT, named in `detail`): restart it' } },
      logLevel: 'warn',
    },
    async (_request, reply) => {
      const state = deps.liveness.check();
      if (!state.live) return sendError(reply, unavailable(`not live: ${state.reason}`));
      return { status: 'ok' };
    },
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
