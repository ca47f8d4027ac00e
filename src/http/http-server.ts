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
 *   carries `Connection: close`, so a client cannot keep streaming a body nobody reads (Node would
 *   otherwise read and discard it to keep the connection alive, for as long as the client sends).
 *   Short bodies are the exception (UNREAD_BODY_KEPT_BYTES). Once the answer is flushed the
 *   connection ends with a lingering close (RFC 9112 §9.6, as nginx and Apache do): the server
 *   half-closes, discards what the client still sends, and closes once the client closes its side,
 *   stops sending (LINGER_IDLE_MS), or at LINGER_MAX_MS or LINGER_MAX_BYTES, so that the client
 *   reads its answer instead of a reset, and a client that keeps sending is still cut off.
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

/*
 * The lingering close. Closing a socket whose receive buffer still holds bytes makes the kernel
 * answer with a reset instead of a FIN; a client still sending its body then fails its next write
 * and, unless it happened to read first, drops the answer it was sent. So the server sends its FIN
 * after the answer (it writes nothing more), reads and discards what arrives, and destroys the
 * socket once the client has closed its side, or at whichever of these bounds comes first:
 *
 * LINGER_IDLE_MS (nginx's lingering_timeout): a client that has seen the answer, or the FIN, stops
 * sending within a round trip, and one that sends its whole body before reading (as blocking HTTP
 * clients do) sends without pauses: a second without a byte means it is done, or gone.
 *
 * LINGER_MAX_BYTES: twice the largest body the service accepts (app.ts's bodyLimit, 1 MiB):
 * enough for a client to finish sending an ordinary body refused from its headers (a 401), or one a
 * little over the limit (a 413), before it reads the answer. A client sending more is not
 * listening, and reading on would only spend bandwidth; it is cut off, reset and all.
 *
 * LINGER_MAX_MS (nginx's lingering_time): long enough for a client on a modest uplink to send
 * LINGER_MAX_BYTES, short enough that a client trickling bytes holds the connection, and its place
 * under HTTP_MAX_CONNECTIONS and HTTP_MAX_CONNECTIONS_PER_ADDRESS, only briefly.
 * HTTP_REQUEST_TIMEOUT, counted from the request's start, still applies to the lingering
 * connection when it ends sooner.
 */
const LINGER_IDLE_MS = 1000;
const LINGER_MAX_BYTES = 2 * 1024 * 1024;
const LINGER_MAX_MS = 5000;

/** Ends the connection after its last answer with a lingering close (above); stands in for Node's socket.destroySoon(). */
function lingerThenClose(socket: Socket): void {
  if (socket.destroyed) return;
  socket.end();
  const readBefore = socket.bytesRead;
  const close = () => {
    socket.destroy();
  };
  const idle = setTimeout(close, LINGER_IDLE_MS);
  const cap = setTimeout(close, LINGER_MAX_MS);
  socket.once('close', () => {
    clearTimeout(idle);
    clearTimeout(cap);
  });
  // A reset from the client ends it too ('close' follows); Node's own error listener stays.
  socket.on('error', () => {});
  if (socket.readableEnded) return close();
  const discard = () => {
    // Node's HTTP parser reads this socket (straight from its handle) and would take the bytes after
    // the body for a new request: its 'data' listener goes, and adding one of ours has Node's HTTP
    // server hand the socket's reads back to the socket (it unconsumes the parser).
    for (const listener of socket.listeners('data')) socket.removeListener('data', listener as (...args: unknown[]) => void);
    socket.on('data', () => {
      if (socket.bytesRead - readBefore > LINGER_MAX_BYTES) close();
      else idle.refresh();
    });
    socket.once('end', close);
  };
  // Reading is usually stopped here (the unread body filled the request's buffer). Pausing and
  // resuming has Node's own 'resume' listener start it again; discard then takes the socket over.
  socket.pause();
  socket.once('resume', discard);
  socket.resume();
}

/**
 * Node ends a connection after an answer carrying `Connection: close` by calling the socket's
 * destroySoon() once the answer is flushed (resOnFinish in _http_server.js, Node 20 to 24), which
 * ends the socket and destroys it as soon as its FIN is written: this socket's destroySoon lingers
 * instead (test/http/slow-and-unread-bodies.test.ts fails if Node stops calling it). A response
 * waiting behind an earlier pipelined one gets its socket later.
 */
function lingerOnClose(response: ServerResponse): void {
  const install = (socket: Socket) => {
    socket.destroySoon = () => lingerThenClose(socket);
  };
  if (response.socket) install(response.socket);
  else response.once('socket', install);
}

/** Every answer goes through writeHead (Fastify's and the token fast path's alike). */
class ClosesUnreadBodies extends ServerResponse {}
// eslint-disable-next-line @typescript-eslint/unbound-method -- Node's own writeHead, called below with the response as `this`.
const writeHead = ServerResponse.prototype.writeHead as (this: ServerResponse, ...args: unknown[]) => ServerResponse;
ClosesUnreadBodies.prototype.writeHead = function (this: ServerResponse, ...args: unknown[]) {
  if (!this.headersSent && bodyUnread(this.req)) {
    this.setHeader('connection', 'close');
    lingerOnClose(this);
  }
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
