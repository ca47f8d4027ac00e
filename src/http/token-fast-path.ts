import type { IncomingMessage, ServerResponse } from 'node:http';
import { OAuthError } from '../domain/tokens/oauth-errors.js';
import type { Logger } from '../logger.js';
import type { ClientAddress } from './client-address.js';
import { requestIdOf } from './request-id.js';
import { oauthErrorResponse, serverErrorResponse, TOKEN_BODY_LIMIT, type TokenEndpoint, type TokenEndpointVersion, type TokenHttpResponse } from './token-endpoint.js';

/**
 * `POST /v1/oauth/token` and `POST /v2/oauth/token`, answered by the HTTP server before Fastify.
 *
 * The token endpoint is the busiest public route and its own work is small (a cached client row,
 * one SHA-256, a token shared per second). Through Fastify a token request costs much more CPU
 * than that, the difference spread over routing, hooks, the content-type parser, validation,
 * serialisation and the reply machinery; answered here it is one body read, the shared
 * TokenEndpoint and one write (`npm run bench -- --only token`; docs/benchmarks.md). Everything
 * else, those paths with a trailing slash or a query string included, goes to Fastify, whose token
 * routes call the same TokenEndpoint, so both answer alike; what Fastify would add per request is
 * done here too: the request id and the request log lines.
 */

const PATHS: Record<string, TokenEndpointVersion> = { '/v1/oauth/token': 1, '/v2/oauth/token': 2 };

/**
 * The hooks Fastify runs for its token routes, by kind and function name, whose work `serve` does
 * too: `requestIdAndUrlCheck` (app.ts) sets X-Request-Id, as `reply` below does, and refuses a URL
 * holding NUL, which the two exact paths served here cannot. A test compares this list with the
 * hooks Fastify reports for those routes: a hook added there must be reproduced here, then listed.
 */
export const REPRODUCED_GLOBAL_HOOKS: Readonly<Record<string, readonly string[]>> = { onRequest: ['requestIdAndUrlCheck'] };

/** The handler for the server: returns false (untouched) for every request that is not a token request. */
export function tokenFastPath(endpoint: TokenEndpoint, log: Logger, addresses: ClientAddress): (request: IncomingMessage, response: ServerResponse) => boolean {
  return (request, response) => {
    if (request.method !== 'POST') return false;
    const version = PATHS[request.url!];
    if (version === undefined) return false;
    serve(endpoint, log, addresses, version, request, response);
    return true;
  };
}

function serve(endpoint: TokenEndpoint, parentLog: Logger, addresses: ClientAddress, version: TokenEndpointVersion, request: IncomingMessage, response: ServerResponse): void {
  const startedAt = performance.now();
  const reqId = requestIdOf(request.headers);
  const logsRequests = parentLog.isLevelEnabled('info');
  const log = logsRequests ? parentLog.child({ reqId }) : parentLog;
  if (logsRequests) {
    const { method, url, headers, socket } = request;
    log.info({ req: { method, url, host: headers.host, remoteAddress: socket.remoteAddress, remotePort: socket.remotePort } }, 'incoming request');
  }
  const reply = (answer: TokenHttpResponse, closeConnection = false) => {
    if (response.headersSent) return;
    response.writeHead(answer.status, { ...answer.headers, 'x-request-id': reqId, 'content-length': Buffer.byteLength(answer.body), ...(closeConnection ? { connection: 'close' } : {}) });
    response.end(answer.body);
    if (logsRequests) log.info({ res: { statusCode: answer.status }, responseTime: performance.now() - startedAt }, 'request completed');
  };
  const tooLarge = () => reply(oauthErrorResponse(new OAuthError('invalid_request', 'request body too large', 413)), true);

  if (Number(request.headers['content-length']) > TOKEN_BODY_LIMIT) return tooLarge();
  const chunks: Buffer[] = [];
  let size = 0;
  request.on('data', (chunk: Buffer) => {
    size += chunk.length;
    if (size <= TOKEN_BODY_LIMIT) chunks.push(chunk);
    else if (!response.headersSent) tooLarge();
  });
  request.on('error', () => {
    // The client went away mid-body: nothing to answer.
  });
  request.on('end', () => {
    if (size > TOKEN_BODY_LIMIT) return;
    const body = chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks, size).toString('utf8');
    endpoint({ version, contentType: request.headers['content-type'], authorization: request.headers.authorization, body, sourceAddress: addresses.ofRequest(request) }).then(
      (answer) => reply(answer),
      (error: unknown) => {
        log.error({ err: error }, 'token request failed');
        reply(serverErrorResponse());
      },
    );
  });
}
