import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, FastifySchemaValidationError } from 'fastify';
import fp from 'fastify-plugin';
import type { ErrorObject } from 'ajv';
import { isDatabaseUnavailable } from '../../storage/database-errors.js';
import { DomainError, invalid } from '../../domain/errors.js';
import { HttpProblem } from '../problem.js';
import { explainSchemaErrors } from '../../schema-validation.js';

/** Retry-After of a 503 while the database is away (a restart takes seconds). */
export const DATABASE_RETRY_AFTER_S = 2;

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

export function sendProblem(reply: FastifyReply, problem: HttpProblem): FastifyReply {
  for (const [name, value] of Object.entries(problem.headers)) reply.header(name, value);
  return reply.code(problem.status).type(PROBLEM_CONTENT_TYPE).send(problem.toJSON());
}

/** The first member at fault as `{path, message}`, in words (ajv's own messages often do not name the member or the values allowed). */
export function formatSchemaErrors(errors: FastifySchemaValidationError[], dataVar: string): DomainError {
  const first = explainSchemaErrors(errors as unknown as ErrorObject[])[0] ?? { pointer: [], message: 'is invalid' };
  // Fastify keeps these errors on the problem it throws; the value sent (a secret, maybe) stays out of them.
  for (const error of errors as Array<{ data?: unknown }>) delete error.data;
  const path = [dataVar, ...first.pointer].join('.');
  return invalid(`request ${dataVar}`, [{ path, message: first.message }]);
}

const STATUS_OF = { invalid: 400, not_found: 404, conflict: 409, rate_limited: 429 } as const;

/** Maps anything thrown inside a route to the problem the client should see. */
export function toProblem(error: FastifyError | Error): HttpProblem {
  if (error instanceof HttpProblem) return error;
  if (error instanceof DomainError) {
    const headers = error.retryAfterSeconds === undefined ? undefined : { 'retry-after': String(error.retryAfterSeconds) };
    return new HttpProblem(STATUS_OF[error.kind], error.message, error.errors, headers);
  }
  const fastifyError = error as FastifyError;
  if (fastifyError.validation) return toProblem(formatSchemaErrors(fastifyError.validation, fastifyError.validationContext ?? 'body'));
  switch (fastifyError.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new HttpProblem(413, 'request body is larger than 1 MiB');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new HttpProblem(415, 'unsupported Content-Type; send application/json');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new HttpProblem(400, 'request body is empty; send a JSON document');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new HttpProblem(400, 'request body is not valid JSON');
    default:
      break;
  }
  if (isDatabaseUnavailable(error)) {
    return new HttpProblem(503, 'the database is unavailable right now; nothing was stored, retry later', undefined, { 'retry-after': String(DATABASE_RETRY_AFTER_S) });
  }
  if (fastifyError.statusCode === 429) {
    return new HttpProblem(429, 'rate limit exceeded; retry later');
  }
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
export const errorsPlugin = fp(async (app: FastifyInstance, options: ErrorsPluginOptions) => {
  app.setErrorHandler((error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const problem = toProblem(error);
    if (problem.status === 503) {
      request.log.warn({ err: error }, 'database unavailable');
      options.onDatabaseUnavailable?.(error);
    } else if (problem.status >= 500) request.log.error({ err: error }, 'request failed');
    return sendProblem(reply, problem);
  });
  app.setNotFoundHandler((request, reply) => sendProblem(reply, new HttpProblem(404, `no route for ${request.method} ${request.url.split('?')[0]}`)));
}, { name: 'errors' });
