import { createServer, ServerResponse, type IncomingMessage, type RequestListener, type Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Config } from '../config.js';
import { normalizeAddress, type ClientAddress } from './client-address.js';

/**
 * The API's node:http server, with the bounds a client must not be able to lift
 * (docs/deployment.md, "Timeouts and connection caps"):
 * - the whole request (headers and body) within HTTP_REQUEST_TIMEOUT, the headers within
 *   HTTP_HEADERS_TIMEOUT (a new connection that sends nothing included): past either, Node answers
 *   408 and closes the connection. Node checks them every `connectionsCheckingInterval` (30 s by
 *   default, which would let a 1 s timeout run 30 s): here a quarter of the headers timeout, at
 *   most a second;
 * - at most HTTP_MAX_CONNECTIONS open connections, and HTTP_MAX_CONNECTIONS_PER_ADDRESS from one
 *   peer address; over either, a new connection is closed at once;
 * - an answer sent before the request's body was read (a 401 decided from the headers, a 413)
 *   carries `Connection: close`, and the connection is closed once the answer is flushed, so a
 *   client cannot keep streaming a body nobody reads. Node would otherwise read and discard it to
 *   keep the connection alive, for as long as the client sends. Short bodies are the exception
 *   (UNREAD_BODY_KEPT_BYTES).
 */
export type HttpServerLimits = Pick<Config, 'httpRequestTimeoutMs' | 'httpHeadersTimeoutMs' | 'httpMaxConnections' | 'httpMaxConnectionsPerAddress'>;

/**
 * An unread body announced at most this long is still read (and discarded) after the answer, so
 * that the connection stays alive for the client's next request: a refused request's small body is
 * usually in the server's buffers already (an answer decided from the headers is written before
 * Node has parsed the rest of the packet). A longer body, or a chunked one, closes the connection.
 */
const UNREAD_BODY_KEPT_BYTES = 64 * 1024;

/** The request's body has not been received in full, and is chunked or announced longer than UNREAD_BODY_KEPT_BYTES. */
function bodyUnread(request: IncomingMessage | undefined): boolean {
  if (!request || request.complete) return false;
  const length = request.headers['content-length'];
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && !(Number(length) <= UNREAD_BODY_KEPT_BYTES));
}

/** Every answer goes through writeHead (Fastify's and the token fast path's alike). */
class ClosesUnreadBodies extends ServerResponse {}
// eslint-disable-next-line @typescript-eslint/unbound-method -- Node's own writeHead, called below with the response as `this`.
const writeHead = ServerResponse.prototype.writeHead as (this: ServerResponse, ...args: unknown[]) => ServerResponse;
ClosesUnreadBodies.prototype.writeHead = function (this: ServerResponse, ...args: unknown[]) {
  if (!this.headersSent && bodyUnread(this.req)) this.setHeader('connection', 'close');
  return writeHead.apply(this, args);
};

/**
 * Closes a new connection over `cap` from one peer address. A peer trusted as a proxy
 * (TRUST_PROXY) is exempt: every caller behind it shares its address, and only the overall cap
 * bounds it.
 */
function capConnectionsPerAddress(server: Server, cap: number, isProxy: (address: string) => boolean): void {
  if (cap === 0) return;
  const open = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const address = normalizeAddress(socket.remoteAddress ?? '');
    if (isProxy(address)) return;
    const count = (open.get(address) ?? 0) + 1;
    if (count > cap) {
      socket.destroy();
      return;
    }
    open.set(address, count);
    socket.once('close', () => {
      const left = open.get(address)! - 1;
      if (left === 0) open.delete(address);
      else open.set(address, left);
    });
  });
}

export function createHttpServer(limits: HttpServerLimits, addresses: ClientAddress, listener: RequestListener): Server {
  const server = createServer(
    {
      ServerResponse: ClosesUnreadBodies as typeof ServerResponse,
      requestTimeout: limits.httpRequestTimeoutMs,
      headersTimeout: limits.httpHeadersTimeoutMs,
      connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(limits.httpHeadersTimeoutMs / 4))),
    },
    listener,
  );
  server.maxConnections = limits.httpMaxConnections;
  capConnectionsPerAddress(server, limits.httpMaxConnectionsPerAddress, (address) => addresses.trusts(address, 0));
  return server;
}
