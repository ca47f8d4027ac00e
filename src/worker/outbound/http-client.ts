import { isIP } from 'node:net';
import { rootCertificates } from 'node:tls';
import { Agent, type Dispatcher } from 'undici';
import type { OutboundProxy } from '../../config.js';
import { ForbiddenAddressError, GuardedResolver, hostForLookup, isPublicAddress } from '../../net/address-policy.js';
import { DeliveryFailure } from './delivery-failure.js';
import { createProxyConnector } from './proxy-connector.js';

/** Sent on every outbound call: notifications and the OAuth2 token requests made for them. */
export { USER_AGENT } from '../../domain/notifications/webhook-headers.js';

/**
 * The one HTTP client for everything the service sends out: callback calls and OAuth2 token
 * requests for them. It never follows redirects, bounds the whole call by one timeout, reads only
 * a bounded prefix of the answer, and connects only to addresses the SSRF policy allows — the
 * address it checked is the address it connects to (the policy runs as the socket's `lookup`,
 * through `resolver`, which the concurrency limiter asks too). With OUTBOUND_PROXY its connections
 * are tunnelled through the egress proxy by CONNECT to that same checked address (proxy-connector.ts).
 */

export interface ClientCertificate {
  /** PEM certificate chain. */
  cert: string;
  /** PEM private key. */
  key: string;
}

export interface OutboundHttpClientOptions {
  /** Whole call, connect to last byte read (CALLBACK_TIMEOUT). */
  timeoutMs: number;
  allowPrivateNetworks: boolean;
  /** The service's certificate for mTLS (MTLS_CERT_FILE / MTLS_KEY_FILE). */
  clientCertificate?: ClientCertificate;
  /** Extra trusted CA certificates in PEM (MTLS_CA_FILE), added to the default trust store. */
  extraCa?: string;
  /** Open connections per origin and agent; keeps one busy receiver from hogging sockets. */
  connectionsPerOrigin?: number;
  /** Resolves callback hosts under the policy; shared with whoever counts calls by address. */
  resolver?: GuardedResolver;
  /** OUTBOUND_PROXY: connections go through this proxy by CONNECT to the vetted address (proxy-connector.ts). */
  proxy?: OutboundProxy;
  /** OUTBOUND_PROXY_BYPASS: destinations connected to directly although `proxy` is set. */
  proxyBypass?: readonly string[];
}

interface OutboundRequest {
  url: string;
  method?: 'POST' | 'GET';
  headers: Record<string, string>;
  body?: string;
  useClientCertificate?: boolean;
  /** Bytes of the answer to keep; the rest is not read (the connection is dropped instead). */
  maxBodyBytes: number;
}

export interface OutboundResponse {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  truncated: boolean;
}

export interface OutboundHttpClient {
  send(request: OutboundRequest): Promise<OutboundResponse>;
  /** The resolver its connections look hosts up with. */
  readonly resolver: GuardedResolver;
  readonly hasClientCertificate: boolean;
  close(): Promise<void>;
}

const TLS_ERROR = /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|HOSTNAME_MISMATCH|ERR_OSSL)/;

function errorCode(error: unknown): string | undefined {
  let current = error as { code?: unknown; cause?: unknown } | undefined;
  for (let depth = 0; current && depth < 4; depth++) {
    if (typeof current.code === 'string') return current.code;
    current = current.cause as typeof current;
  }
  return undefined;
}

/** The whole call took longer than `timeoutMs`: dispatchCall's timer, or one of undici's backstops. */
function timedOut(url: URL, timeoutMs: number, cause?: unknown): DeliveryFailure {
  return new DeliveryFailure(`timed out after ${timeoutMs} ms calling ${url.host}`, 'TIMEOUT', cause === undefined ? undefined : { cause });
}

/** A failed call as a DeliveryFailure, its message fit for the delivery log (no secrets, no stack). */
function describeFailure(error: unknown, url: URL, timeoutMs: number): DeliveryFailure {
  const target = url.host;
  // dispatchCall's timer: already described.
  if (error instanceof DeliveryFailure) return error;
  const forbidden = error instanceof ForbiddenAddressError ? error : (error as { cause?: unknown })?.cause;
  if (forbidden instanceof ForbiddenAddressError) {
    return new DeliveryFailure(`refused to connect: ${forbidden.message}`, forbidden.code, { cause: error });
  }
  const code = errorCode(error) ?? 'UNKNOWN';
  const message = (error as Error)?.message ?? String(error);
  switch (code) {
    case 'ECONNREFUSED':
      return new DeliveryFailure(`connection refused by ${target}`, code, { cause: error });
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return new DeliveryFailure(`host ${url.hostname} could not be resolved`, code, { cause: error });
    case 'ECONNRESET':
    case 'UND_ERR_SOCKET':
      return new DeliveryFailure(`connection to ${target} was closed unexpectedly (${message})`, code, { cause: error });
    case 'UND_ERR_CONNECT_TIMEOUT':
    case 'UND_ERR_HEADERS_TIMEOUT':
    case 'UND_ERR_BODY_TIMEOUT':
      return timedOut(url, timeoutMs, error);
  }
  if (TLS_ERROR.test(code)) return new DeliveryFailure(`TLS handshake with ${target} failed: ${code}: ${message}`, code, { cause: error });
  return new DeliveryFailure(`calling ${target} failed: ${code}: ${message}`, code, { cause: error });
}

/** IP literals never reach `lookup`, so the address policy is applied to them here. */
function refuseForbiddenLiteral(url: URL, allowPrivate: boolean): void {
  const host = hostForLookup(url.hostname);
  if (!allowPrivate && isIP(host) && !isPublicAddress(host)) throw new ForbiddenAddressError(host, host);
}

/** Response headers as undici's `request()` gives them: lower-case names, repeated ones as arrays. */
function parseRawHeaders(raw: Buffer[]): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = {};
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!.toString('latin1').toLowerCase();
    const value = raw[i + 1]!.toString('latin1');
    const seen = headers[name];
    headers[name] = seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value];
  }
  return headers;
}

/**
 * One call through undici's dispatcher API with a handler that keeps the first `maxBodyBytes` of
 * the answer. undici's `request()` wraps each answer in a Readable stream (plus an AsyncResource
 * and, for the timeout, an AbortSignal: an EventTarget per call); at the delivery rates the worker
 * aims for, those cost more CPU than the call itself (docs/benchmarks.md). `timeoutMs` bounds the
 * whole call, connect to last byte; an answer longer than `maxBodyBytes` is cut by closing the
 * connection, so a huge or endless body costs at most one chunk.
 */
function dispatchCall(dispatcher: Dispatcher, url: URL, outbound: OutboundRequest, timeoutMs: number): Promise<OutboundResponse> {
  return new Promise((resolve, reject) => {
    let abort: ((reason: Error) => void) | undefined;
    let settled = false;
    let statusCode = 0;
    let headers: Record<string, string | string[]> = {};
    const chunks: Buffer[] = [];
    let size = 0;
    const finish = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      outcome();
    };
    const respond = (truncated: boolean) => {
      const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
      finish(() => resolve({ statusCode, headers, body: truncated ? body.subarray(0, outbound.maxBodyBytes) : body, truncated }));
    };
    const timer = setTimeout(() => {
      const error = timedOut(url, timeoutMs);
      finish(() => reject(error));
      abort?.(error);
    }, timeoutMs);
    const handler: Dispatcher.DispatchHandler = {
      onConnect(abortCall: (reason: Error) => void) {
        abort = abortCall;
        if (settled) abortCall(timedOut(url, timeoutMs));
      },
      onHeaders(status: number, rawHeaders: Buffer[]) {
        // 1xx interim answers are not the response.
        if (status < 200) return true;
        statusCode = status;
        headers = parseRawHeaders(rawHeaders);
        return true;
      },
      onData(chunk: Buffer) {
        if (settled) return false;
        chunks.push(chunk);
        size += chunk.length;
        if (size > outbound.maxBodyBytes) {
          respond(true);
          abort?.(new Error('answer longer than the logged prefix; connection closed'));
          return false;
        }
        return true;
      },
      onComplete() {
        respond(false);
      },
      onError(error: Error) {
        finish(() => reject(error));
      },
    };
    try {
      dispatcher.dispatch({ origin: url.origin, path: `${url.pathname}${url.search}`, method: outbound.method ?? 'POST', headers: outbound.headers, body: outbound.body ?? null }, handler);
    } catch (error) {
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- what dispatch threw, passed on as it is (undici throws Errors).
      finish(() => reject(error));
    }
  });
}

export function createOutboundHttpClient(options: OutboundHttpClientOptions): OutboundHttpClient {
  const { timeoutMs, allowPrivateNetworks } = options;
  const resolver = options.resolver ?? new GuardedResolver(allowPrivateNetworks);
  // Setting `ca` replaces Node's default trust, so the bundled roots are passed along with the extra CA.
  const ca = options.extraCa ? [...rootCertificates, options.extraCa] : undefined;
  const { proxy } = options;
  const agentOptions = (certificate?: ClientCertificate): Agent.Options => {
    const tls = { ...(ca ? { ca } : {}), ...(certificate ? { cert: certificate.cert, key: certificate.key } : {}) };
    return {
      connections: options.connectionsPerOrigin ?? 8,
      keepAliveTimeout: 10_000,
      // Backstops; dispatchCall's timer is what bounds the whole call.
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      // Through the egress proxy, the destination still resolved and vetted here (proxy-connector.ts).
      connect: proxy ? createProxyConnector({ proxy, bypass: options.proxyBypass ?? [], resolver, timeoutMs, tls }) : { timeout: timeoutMs, lookup: resolver.lookup, rejectUnauthorized: true, ...tls },
    };
  };
  // Two agents, so a TLS session made without the certificate is never reused where one is needed.
  const plain = new Agent(agentOptions());
  const withCertificate = options.clientCertificate ? new Agent(agentOptions(options.clientCertificate)) : undefined;

  async function send(outbound: OutboundRequest): Promise<OutboundResponse> {
    const url = new URL(outbound.url);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new DeliveryFailure(`unsupported URL scheme ${url.protocol}`, 'BAD_URL');
    if (outbound.useClientCertificate && !withCertificate) {
      throw new DeliveryFailure('mTLS is required but MTLS_CERT_FILE and MTLS_KEY_FILE are not configured', 'MTLS_NOT_CONFIGURED');
    }
    const dispatcher = outbound.useClientCertificate ? withCertificate! : plain;
    try {
      refuseForbiddenLiteral(url, allowPrivateNetworks);
      return await dispatchCall(dispatcher, url, outbound, timeoutMs);
    } catch (error) {
      throw describeFailure(error, url, timeoutMs);
    }
  }

  return {
    send,
    resolver,
    hasClientCertificate: withCertificate !== undefined,
    async close() {
      await Promise.all([plain.close(), withCertificate?.close()]);
    },
  };
}
