import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, FastifySchemaValidationError } from 'fastify';
import fp from 'fastify-plugin';
import type { ErrorObject } from 'ajv';
import { isDatabaseUnavailable } from '../../services/database-readiness.js';
import { DomainError, invalid, unavailable, type DomainErrorKind } from '../../domain/errors.js';
import { HttpProblem } from '../problem.js';
import { explainSchemaErrors } from '../../schema-validation.js';
import { unknownParameterMessage } from '../query-parameters.js';
import { ROOT_INDEX, RouteTable } from '../not-found.js';

/** Retry-After of a 503 while the database is away (a restart takes seconds). */
export const DATABASE_RETRY_AFTER_S = 2;

const PROBLEM_CONTENT_TYPE = 'application/problem+json';

function sendProblem(reply: FastifyReply, problem: HttpProblem): FastifyReply {
  for (const [name, value] of Object.entries(problem.headers)) reply.header(name, value);
  return reply.code(problem.status).type(PROBLEM_CONTENT_TYPE).send(problem.toJSON());
}

/** Answers with the error's problem document, without going through the error handler (so without its logging). */
export function sendError(reply: FastifyReply, error: DomainError): FastifyReply {
  return sendProblem(reply, problemOf(error));
}

/**
 * Every query parameter the route does not take, each with what it takes or the name most likely
 * meant (src/http/query-parameters.ts); undefined when the query string has none. Read from the
 * error of the closed schema: ajv (`verbose`) gives it the whole query object and the schema.
 */
function unknownParameters(errors: readonly ErrorObject[]): DomainError | undefined {
  const error = errors.find((e) => e.keyword === 'additionalProperties' && e.instancePath === '');
  if (!error) return undefined;
  const known = Object.keys((error.parentSchema as { properties?: object } | undefined)?.properties ?? {});
  const sent = error.data !== null && typeof error.data === 'object' ? Object.keys(error.data) : [];
  const unknown = sent.filter((name) => !known.includes(name));
  if (unknown.length === 0) unknown.push(String((error.params as { additionalProperty?: unknown }).additionalProperty));
  const faults = unknown.map((name) => ({ path: `querystring.${name}`, message: unknownParameterMessage(name, known) }));
  if (faults.length === 1) return invalid('request querystring', faults);
  const paths = faults.map((f) => f.path);
  return new DomainError('invalid', `request querystring is invalid: ${paths.slice(0, -1).join(', ')} and ${paths.at(-1)} are not known parameters`, faults);
}

/** The first member at fault as `{path, message}`, in words (ajv's own messages often do not name the member or the values allowed). */
export function formatSchemaErrors(errors: FastifySchemaValidationError[], dataVar: string): DomainError {
  const unknown = dataVar === 'querystring' ? unknownParameters(errors) : undefined;
  if (unknown) {
    for (const error of errors as Array<{ data?: unknown }>) delete error.data;
    return unknown;
  }
  const first = explainSchemaErrors(errors)[0] ?? { pointer: [], message: 'is invalid' };
  // Fastify keeps these errors on the problem it throws; the value sent (a secret, maybe) stays out of them.
  for (const error of errors as Array<{ data?: unknown }>) delete error.data;
  const path = [dataVar, ...first.pointer].join('.');
  return invalid(`request ${dataVar}`, [{ path, message: first.message }]);
}

const STATUS_OF: Record<DomainErrorKind, number> = {
  invalid: 400,
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  unavailable: 503,
};

/** A DomainError as RFC 9457 renders it: its kind's status, its message and field errors, Retry-After and WWW-Authenticate. */
function problemOf(error: DomainError): HttpProblem {
  const headers: Record<string, string> = {};
  if (error.challenge !== undefined) headers['www-authenticate'] = error.challenge;
  if (error.retryAfterSeconds !== undefined) headers['retry-after'] = String(error.retryAfterSeconds);
  return new HttpProblem(STATUS_OF[error.kind], error.message, error.errors, headers);
}

/** What Fastify itself refuses (body parsing, its rate limit), in the taxonomy's words; undefined for anything else. */
function frameworkError(error: FastifyError): DomainError | undefined {
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new DomainError('too_large', 'request body is larger than 1 MiB');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new DomainError('unsupported_media_type', 'unsupported Content-Type; send application/json');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return invalid('request body is empty; send a JSON document');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return invalid('request body is not valid JSON');
    default:
      return undefined;
  }
}

/** Maps anything thrown inside a route to the problem the client should see: the one place errors meet HTTP. */
function toProblem(error: FastifyError | Error): HttpProblem {
  if (error instanceof DomainError) return problemOf(error);
  const fastifyError = error as FastifyError;
  if (fastifyError.validation) return problemOf(formatSchemaErrors(fastifyError.validation, fastifyError.validationContext ?? 'body'));
  const refused = frameworkError(fastifyError);
  if (refused) return problemOf(refused);
  if (isDatabaseUnavailable(error)) return problemOf(unavailable('the database is unavailable right now; nothing was stored, retry later', DATABASE_RETRY_AFTER_S));
  if (fastifyError.statusCode === 429) return problemOf(new DomainError('rate_limited', 'rate limit exceeded; retry later'));
  // Any other refusal of Fastify's keeps its own 4xx status.
  if (error instanceof SyntaxError || (fastifyError.statusCode !== undefined && fastifyError.statusCode >= 400 && fastifyError.statusCode < 500)) {
    return new HttpProblem(fastifyError.statusCode ?? 400, fastifyError.statusCode === 400 || !fastifyError.statusCode ? 'request is malformed' : error.message);
  }
  return new HttpProblem(500, 'an unexpected error occurred; it has been logged');
}

export interface ErrorsPluginOptions {
  /** Told of every error that became a 503 because the database could not serve (readiness counts them). */
  onDatabaseUnavailable?: (error: unknown) => void;
}

/** One place where errors become RFC 9457 problem documents; 5xx details stay in the log. */
export const errorsPlugin = fp(
  async (app: FastifyInstance, options: ErrorsPluginOptions) => {
    app.setErrorHandler((error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
      const problem = toProblem(error);
      if (problem.status === 503) {
        request.log.warn({ err: error }, 'database unavailable');
        options.onDatabaseUnavailable?.(error);
      } else if (problem.status >= 500) request.log.error({ err: error }, 'request failed');
      return sendProblem(reply, problem);
    });
    // A request no route takes: `/` gets the index, any other path the route it most likely meant (not-found.ts).
    const routes = new RouteTable();
    app.addHook('onRoute', routes.collect);
    app.setNotFoundHandler((request, reply) => {
      const path = request.url.split('?')[0]!;
      if (path === '/' && (request.method === 'GET' || request.method === 'HEAD')) return reply.code(200).send(ROOT_INDEX);
      const hint = routes.hint(request.method, path);
      return sendError(reply, new DomainError('not_found', `no route for ${request.method} ${path}${hint ? `; ${hint}` : ''}`));
    });
  },
  { name: 'errors' },
);
