import type { TypedApp } from '../typed-app.js';
import { sql } from 'kysely';
import { Type } from 'typebox';
import type { AppDeps } from '../../deps.js';
import { HttpProblem } from '../problem.js';

const Status = Type.Object({ status: Type.String() }, { examples: [{ status: 'ok' }] });

/** Liveness says the process answers; readiness says it can reach its database. */
export async function healthRoutes(app: TypedApp, deps: AppDeps): Promise<void> {
  app.get('/health/live', { schema: { tags: ['operations'], operationId: 'getLiveness', description: 'Answers 200 `{"status":"ok"}` while the process runs; it does not touch the database. Public: restrict it at the network edge.', summary: 'Liveness: the process answers', response: { 200: Status } }, logLevel: 'warn' }, async () => ({ status: 'ok' }));
  app.get('/health/ready', { schema: { tags: ['operations'], operationId: 'getReadiness', description: 'Answers 200 when the process can reach its database, 503 otherwise (take the instance out of rotation). Public.', summary: 'Readiness: the process can reach its database', response: { 200: Status } }, logLevel: 'warn' }, async () => {
    try {
      await sql`select 1`.execute(deps.db);
    } catch {
      throw new HttpProblem(503, 'database unreachable');
    }
    return { status: 'ok' };
  });
}
