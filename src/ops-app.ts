import Fastify from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { TypedApp } from './http/typed-app.js';
import type { AppDeps } from './deps.js';
import { errorsPlugin, formatSchemaErrors } from './http/plugins/errors.js';
import { closeQueryString } from './http/query-parameters.js';
import { validatorCompiler } from './schema-validation.js';
import { lazyRequestLogger } from './http/request-logger.js';
import { healthRoutes } from './http/routes/health.js';
import { metricsRoute } from './http/routes/metrics.js';

/**
 * The operations endpoints alone (/health/*, /metrics) for a `--role worker` process, so its
 * delivery counters and liveness can be scraped like the API's (METRICS_PORT). Kept apart from
 * app.ts so that a worker process loads none of the API's routes, schemas and documentation.
 */
export async function buildOpsApp(deps: AppDeps): Promise<TypedApp> {
  const app = Fastify({ loggerInstance: deps.log, childLoggerFactory: lazyRequestLogger, schemaErrorFormatter: formatSchemaErrors }).withTypeProvider<TypeBoxTypeProvider>();
  // As on the API's port: a query parameter these routes do not take is a 400 naming it (query-parameters.ts).
  app.addHook('onRoute', closeQueryString);
  app.setValidatorCompiler(validatorCompiler);
  await app.register(errorsPlugin, { onDatabaseUnavailable: (error) => deps.readiness.noteFailure(error) });
  await healthRoutes(app, deps);
  await metricsRoute(app, deps);
  return app;
}
