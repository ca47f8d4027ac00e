import Fastify, { type FastifyServerOptions } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { TypedApp } from './http/typed-app.js';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { AppDeps } from './deps.js';
import { errorsPlugin, formatSchemaErrors, sendError } from './http/plugins/errors.js';
import { protectRoutes } from './http/plugins/auth.js';
import { validatorCompiler } from './schema-validation.js';
import { WEBHOOKS } from './http/schemas/webhooks.js';
import { DocumentComponents, documentObject, documentRoute, SCOPE_DESCRIPTIONS } from './http/openapi.js';
import { lazyRequestLogger } from './http/request-logger.js';
import { healthRoutes } from './http/routes/health.js';
import { jwksRoute } from './http/routes/jwks.js';
import { meRoute } from './http/routes/me.js';
import { requestRoutes } from './http/routes/requests.js';
import { requestEventRoutes } from './http/routes/request-events.js';
import { tokenRouteV1, tokenRouteV2 } from './http/routes/oauth-token.js';
import { requestIdOf } from './http/request-id.js';
import { jsonHasNul, NUL_REFUSED, urlHasNul } from './http/nul-characters.js';
import { invalidJsonMessage } from './http/json-syntax.js';
import { invalid } from './domain/errors.js';
import { createTokenEndpoint } from './http/token-endpoint.js';
import { tokenFastPath } from './http/token-fast-path.js';
import { clientAddress } from './http/client-address.js';
import { createHttpServer } from './http/http-server.js';
import { answerSecretsUncached } from './http/secret-bearing.js';
import { closeQueryString } from './http/query-parameters.js';
import { acceptAbsentBody } from './http/optional-body.js';
import { adminAccountsRoutes } from './http/routes/admin-accounts.js';
import { adminClientsRoutes } from './http/routes/admin-clients.js';
import { adminExperiencesRoutes } from './http/routes/admin-experiences.js';
import { adminConsoleLinksRoutes } from './http/routes/admin-console-links.js';
import { subscriptionRoutes } from './http/routes/subscriptions.js';
import { signingSecretRoutes } from './http/routes/signing-secrets.js';
import { notificationRoutes } from './http/routes/notifications.js';
import { listenSessionRoutes } from './http/routes/listen-sessions.js';
import { deliveryPolicyRoute } from './http/routes/delivery-policy.js';
import { metricsRoute } from './http/routes/metrics.js';
import { consoleRoutes } from './http/routes/console.js';
import { CONSOLE_SECURITY_HEADERS, isConsolePath } from './http/console/security-headers.js';
import { CONSOLE_DIST_DIR } from './console-build.js';

/** A route module: each declares the narrow dependencies it uses (its service's context); AppDeps holds them all. */
type RouteModule = (app: TypedApp, deps: AppDeps) => Promise<void>;

/** Bearer-protected resource routes, served identically under /v1 and /v2. */
const API_ROUTES: RouteModule[] = [
  meRoute,
  adminAccountsRoutes,
  adminClientsRoutes,
  adminConsoleLinksRoutes,
  adminExperiencesRoutes,
  subscriptionRoutes,
  signingSecretRoutes,
  requestRoutes,
  requestEventRoutes,
  notificationRoutes,
  deliveryPolicyRoute,
  listenSessionRoutes,
];

export interface BuildAppOptions {
  /** Sees every route as it is registered (the route table that tests walk). */
  onRoute?: (route: { method: string | string[]; url: string; config?: { scope?: string; secretBearing?: boolean }; schema?: { response?: Record<string, unknown> } }) => void;
  /** The web console served at /console/ (docs/console.md): its built files (default `console/dist`) and what its 503 says while they are missing. */
  console?: { dir?: string; notBuiltDetail?: () => string };
}

/** Builds the HTTP application. It never listens: server.ts does, tests use `inject` or listen themselves. */
export async function buildApp(deps: AppDeps, options: BuildAppOptions = {}): Promise<TypedApp> {
  const tokenEndpoint = createTokenEndpoint(deps);
  // Who the caller is, under TRUST_PROXY: one rule for the fast path, the Fastify routes and request.ip.
  const addresses = clientAddress(deps.config.trustProxy);
  const answerTokenRequest = tokenFastPath(tokenEndpoint, deps.log, addresses);
  const app = Fastify({
    // The server answers POST /v1|v2/oauth/token itself (token-fast-path.ts) and hands Fastify the rest.
    // Its timeouts, connection caps and unread bodies: http-server.ts; the keep-alive settings are Fastify's.
    serverFactory: (handler, options: FastifyServerOptions) => {
      const server = createHttpServer(deps.config, addresses, (request, response) => {
        if (!answerTokenRequest(request, response)) handler(request, response);
      });
      server.keepAliveTimeout = options.keepAliveTimeout!;
      server.setTimeout(options.connectionTimeout);
      return server;
    },
    requestTimeout: deps.config.httpRequestTimeoutMs,
    loggerInstance: deps.log,
    childLoggerFactory: lazyRequestLogger,
    bodyLimit: 1024 * 1024,
    // Every validation error names the member at fault: `body.callback.url is required`.
    schemaErrorFormatter: formatSchemaErrors,
    trustProxy: deps.config.trustProxy.kind === 'none' ? false : addresses.trusts,
    genReqId: (req) => requestIdOf(req.headers),
    routerOptions: { ignoreTrailingSlash: true },
    // Refused before routing (a URL whose percent-encoding is not UTF-8): a problem document too.
    frameworkErrors: (error, request, reply) => {
      // Refused before routing, so the console's own hook has not run: its headers are added here.
      if (isConsolePath(request.url)) reply.headers(CONSOLE_SECURITY_HEADERS);
      sendError(reply, invalid(`the URL is malformed: ${error.code === 'FST_ERR_BAD_URL' ? 'its percent-encoding is not UTF-8' : 'it cannot be routed'}`));
    },
  }).withTypeProvider<TypeBoxTypeProvider>();
  if (options.onRoute) app.addHook('onRoute', options.onRoute);
  // A query parameter a route does not take is a 400 naming it, on every route (query-parameters.ts).
  app.addHook('onRoute', closeQueryString);
  // A route with config.optionalBody reads a missing body as {} (optional-body.ts).
  app.addHook('onRoute', acceptAbsentBody);
  // Routes declared `secretBearing` answer with Cache-Control: no-store (secret-bearing.ts).
  answerSecretsUncached(app);
  app.setValidatorCompiler(validatorCompiler);
  // Only JSON bodies are accepted (the token endpoint adds its form parser in its own scope): text/plain is a 415.
  app.removeContentTypeParser('text/plain');
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (jsonHasNul(body as string)) return done(invalid(`request body ${NUL_REFUSED}`), undefined);
    // Fastify's default JSON parser is its callback form (its type admits the async one too): it answers through `done`.
    void parseJson(request, body as string, (error, parsed) => {
      // Fastify's parser drops where the text went wrong; the problem says it (json-syntax.ts).
      if ((error as { code?: string } | null)?.code === 'FST_ERR_CTP_INVALID_JSON_BODY') return done(invalid(invalidJsonMessage(body as string)), undefined);
      done(error, parsed);
    });
  });
  // Callback-style (not async) hooks: they run on every request, and a promise per hook shows in profiles.
  // A global hook must be reproduced by the token fast path too (REPRODUCED_GLOBAL_HOOKS, tested).
  app.addHook('onRequest', function requestIdAndUrlCheck(request, reply, done) {
    reply.header('x-request-id', request.id);
    done(urlHasNul(request.url) ? invalid(`the URL ${NUL_REFUSED}`) : undefined);
  });

  // The document's named types, collected from the route schemas as the routes are registered.
  const components = new DocumentComponents();
  app.addHook('onRoute', components.collectRoute);
  await app.register(errorsPlugin, { onDatabaseUnavailable: (error) => deps.readiness.noteFailure(error) });
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Reward Request Service',
        version: '1.0.0',
        description:
          'Reward requests, webhook subscriptions, signed notifications and request events. Every resource path exists under /v1 and /v2. ' +
          'A query parameter an operation does not list is a 400 naming it (`errors[].path` `querystring.<name>`), never ignored.',
        license: { name: 'UNLICENSED (proprietary)', url: 'https://rewards.dev/terms' },
      },
      servers: [{ url: deps.config.publicUrl }],
      webhooks: components.webhooks(WEBHOOKS),
      components: {
        // Named types: Problem, then the titled schemas of the routes as they are registered (openapi.ts).
        schemas: components.schemas,
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
          oauth2: {
            type: 'oauth2',
            flows: { clientCredentials: { tokenUrl: `${deps.config.publicUrl}/v2/oauth/token`, scopes: SCOPE_DESCRIPTIONS } },
          },
        },
      },
    },
    // operationIds of the /v1 copies, problem responses, security: src/http/openapi.ts.
    transform: documentRoute,
    transformObject: documentObject,
  });
  // staticCSP: the docs page and its assets carry a Content-Security-Policy that allows only its own
  // files (scripts by hash), like anything else a browser loads from the service.
  await app.register(swaggerUi, { routePrefix: '/docs', staticCSP: true });

  await app.register(async (root: TypedApp) => {
    await healthRoutes(root, deps);
    await jwksRoute(root, deps);
    await metricsRoute(root, deps);
    root.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  });
  await app.register(async (consoleScope: TypedApp) => consoleRoutes(consoleScope, { dir: options.console?.dir ?? CONSOLE_DIST_DIR, notBuiltDetail: options.console?.notBuiltDetail }));

  for (const version of [1, 2] as const) {
    await app.register(
      async (versioned: TypedApp) => {
        await versioned.register(async (tokenScope) => (version === 2 ? tokenRouteV2(tokenScope, tokenEndpoint, addresses) : tokenRouteV1(tokenScope, tokenEndpoint, addresses)));
        await versioned.register(async (protectedScope: TypedApp) => {
          protectRoutes(protectedScope, deps);
          for (const routes of API_ROUTES) await routes(protectedScope, deps);
        });
      },
      { prefix: `/v${version}` },
    );
  }
  return app;
}
