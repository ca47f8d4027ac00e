import { readFileSync } from 'node:fs';
import type { Config } from '../../config.js';
import { createConcurrencyLimiter, DEFAULT_CONCURRENCY_LIMITS, type ConcurrencyLimiter, type ConcurrencyLimits } from './concurrency-limiter.js';
import { deliverAttempt, type AttemptResult, type DeliveryAttemptInput } from './deliver.js';
import { createOutboundHttpClient, type ClientCertificate, type OutboundHttpClient } from './http-client.js';
import { OAuth2TokenCache } from './oauth2-token-cache.js';

/** Composition of the outbound pieces for the job worker: one HTTP client, one token cache, one limiter. */

export type OutboundConfig = Pick<
  Config,
  'callbackTimeoutMs' | 'callbackAllowPrivateNetworks' | 'mtlsCertFile' | 'mtlsKeyFile' | 'mtlsCaFile'
>;

export interface OutboundOptions {
  limits?: ConcurrencyLimits;
  now?: () => number;
  /** The mTLS files' contents when already read (the outbound thread gets them from the main thread). */
  tls?: TlsMaterial;
}

export type TlsMaterial = { clientCertificate?: ClientCertificate; extraCa?: string };

/** What the job worker needs from outbound delivery; the outbound thread offers only this. */
export interface OutboundDelivery {
  /** One attempt, run inside the concurrency limits (keyed by the callback URL's host). Never rejects. */
  deliverAttempt(input: DeliveryAttemptInput): Promise<AttemptResult>;
  /** Waits for calls in flight, then closes every connection. */
  close(): Promise<void>;
}

/** Outbound delivery in this thread, with its parts exposed for tests. */
export interface Outbound extends OutboundDelivery {
  readonly limiter: ConcurrencyLimiter;
  readonly tokens: OAuth2TokenCache;
  readonly http: OutboundHttpClient;
}

export class OutboundConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'OutboundConfigError';
  }
}

function readPem(variable: string, path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    throw new OutboundConfigError(`${variable}: cannot read ${path}: ${(error as Error).message}`);
  }
}

/** Reads the mTLS files once at start, so a bad path stops the service instead of every delivery. */
export function loadTlsMaterial(config: OutboundConfig): TlsMaterial {
  const clientCertificate =
    config.mtlsCertFile && config.mtlsKeyFile
      ? { cert: readPem('MTLS_CERT_FILE', config.mtlsCertFile), key: readPem('MTLS_KEY_FILE', config.mtlsKeyFile) }
      : undefined;
  const extraCa = config.mtlsCaFile ? readPem('MTLS_CA_FILE', config.mtlsCaFile) : undefined;
  return { ...(clientCertificate ? { clientCertificate } : {}), ...(extraCa ? { extraCa } : {}) };
}

export function createOutbound(config: OutboundConfig, options: OutboundOptions = {}): Outbound {
  const limits = options.limits ?? DEFAULT_CONCURRENCY_LIMITS;
  const http = createOutboundHttpClient({
    timeoutMs: config.callbackTimeoutMs,
    allowPrivateNetworks: config.callbackAllowPrivateNetworks,
    connectionsPerOrigin: limits.perHost,
    ...(options.tls ?? loadTlsMaterial(config)),
  });
  const now = options.now ?? Date.now;
  const tokens = new OAuth2TokenCache({ http, now });
  const limiter = createConcurrencyLimiter(limits);

  return {
    deliverAttempt(input) {
      let host: string;
      try {
        host = new URL(input.url).host.toLowerCase();
      } catch {
        return Promise.resolve({ ok: false, latencyMs: 0, error: 'callback URL is not a valid absolute URL' });
      }
      return limiter.run(host, () => deliverAttempt(input, { http, tokens, now }));
    },
    limiter,
    tokens,
    http,
    close: () => http.close(),
  };
}
