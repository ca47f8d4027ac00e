import type { preValidationAsyncHookHandler, RouteOptions } from 'fastify';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The body may be left out: no body at all is read as `{}` (every member has its default).
     * The route declares it here and nowhere else: `acceptAbsentBody` gives it the hook, and the
     * OpenAPI document marks its `requestBody` as not required (openapi.ts).
     */
    optionalBody?: boolean;
  }
}

const absentBodyIsEmpty: preValidationAsyncHookHandler = async (request) => {
  request.body ??= {};
};

/** An onRoute hook of the whole app: a route with `config.optionalBody` reads a missing body as `{}`. */
export function acceptAbsentBody(route: RouteOptions): void {
  if (!route.config?.optionalBody) return;
  const existing = route.preValidation === undefined ? [] : Array.isArray(route.preValidation) ? route.preValidation : [route.preValidation];
  route.preValidation = [absentBodyIsEmpty, ...existing];
}
