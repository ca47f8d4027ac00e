import { createServer as createHttpServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';

/**
 * Real callback receivers on 127.0.0.1 for outbound tests: they record every request (headers,
 * exact body bytes, the client certificate presented) and answer as the test scripts them.
 */

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The body exactly as received. */
  body: string;
  /** CN of the client certificate presented in the TLS handshake, if any. */
  clientCertificateCN?: string;
}

export interface Reply {
  status: number;
  headers?: Record<string, string>;
  body?: string;
  /** Send `body`, then keep writing data until the client goes away (tests the read cap). */
  endless?: boolean;
  /** Send the headers and `body`, then never finish (tests the whole-call timeout). */
  stall?: boolean;
}

/** Answer for the n-th request (0-based); may wait, e.g. on a gate the test opens. */
export type Responder = (request: RecordedRequest, index: number) => Reply | Promise<Reply>;

export interface Receiver {
  /** Base URL, e.g. http://127.0.0.1:41234 */
  url: string;
  port: number;
  requests: RecordedRequest[];
  /** Replace the responder for later requests. */
  respond(responder: Responder): void;
  close(): Promise<void>;
}

export interface TlsReceiverOptions {
  key: string;
  cert: string;
  /** CA that client certificates must chain to. */
  ca?: string;
  /** Refuse the handshake unless the client presents a certificate signed by `ca`. */
  requireClientCertificate?: boolean;
}

const OK: Responder = () => ({ status: 204 });

function clientCommonName(request: IncomingMessage): string | undefined {
  const socket = request.socket as Partial<TLSSocket>;
  if (typeof socket.getPeerCertificate !== 'function') return undefined;
  const cn = socket.getPeerCertificate().subject?.CN;
  return Array.isArray(cn) ? cn[0] : cn || undefined;
}

async function answer(response: ServerResponse, reply: Reply): Promise<void> {
  response.writeHead(reply.status, reply.headers);
  if (reply.endless) {
    const chunk = Buffer.alloc(16 * 1024, 'x');
    let closed = false;
    let wake = () => {};
    response.once('close', () => {
      closed = true;
      wake();
    });
    response.write(reply.body ?? '');
    // Write until the client drops the connection; honour back-pressure so memory stays flat.
    while (!closed) {
      if (!response.write(chunk)) await new Promise<void>((resolve) => response.once('drain', (wake = resolve)));
    }
    return;
  }
  if (reply.stall) {
    response.write(reply.body ?? '');
    return;
  }
  response.end(reply.body);
}

async function listen(server: Server, responderRef: { current: Responder }, host = '127.0.0.1'): Promise<Receiver> {
  const requests: RecordedRequest[] = [];
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const recorded: RecordedRequest = {
        method: request.method ?? '',
        path: request.url ?? '',
        headers: request.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        clientCertificateCN: clientCommonName(request),
      };
      const index = requests.push(recorded) - 1;
      Promise.resolve(responderRef.current(recorded, index))
        .then((reply) => answer(response, reply))
        .catch(() => response.destroy());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  const scheme = 'setSecureContext' in server ? 'https' : 'http';
  return {
    url: `${scheme}://${host}:${port}`,
    port,
    requests,
    respond(responder) {
      responderRef.current = responder;
    },
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}

/** `host`: another loopback address (127.0.0.2 …) for a receiver that must not share 127.0.0.1 with the others. */
export function startHttpReceiver(responder: Responder = OK, host?: string): Promise<Receiver> {
  return listen(createHttpServer(), { current: responder }, host);
}

export function startHttpsReceiver(tls: TlsReceiverOptions, responder: Responder = OK): Promise<Receiver> {
  const server = createHttpsServer({
    key: tls.key,
    cert: tls.cert,
    ...(tls.ca ? { ca: tls.ca } : {}),
    requestCert: Boolean(tls.requireClientCertificate),
    rejectUnauthorized: Boolean(tls.requireClientCertificate),
  });
  return listen(server, { current: responder });
}

/** A loopback port with nothing listening (bound, then released). */
export async function unusedPort(): Promise<number> {
  const server = createHttpServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** A promise the test resolves when it chooses: holds a receiver's answer without any timer. */
export function gate(): { wait: Promise<void>; open(): void } {
  let open!: () => void;
  const wait = new Promise<void>((resolve) => (open = resolve));
  return { wait, open };
}
