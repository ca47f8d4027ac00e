import { createConcurrencyLimiter, DEFAULT_CONCURRENCY_LIMITS, type ConcurrencyLimiter, type ConcurrencyLimits } from './concurrency-limiter.js';
import { deliverAttempt } from './deliver.js';
import { createOutboundHttpClient, type OutboundHttpClient } from './http-client.js';
import { OAuth2TokenCache } from './oauth2-token-cache.js';
import { loadTlsMaterial, type OutboundConfig, type OutboundDelivery, type TlsMaterial } from './outbound-config.js';

export { OutboundConfigError, type OutboundConfig } from './outbound-config.js';

/** Composition of the outbound pieces for the job worker: one HTTP client, one token cache, one limiter. */

export interface OutboundOptions {
  limits?: ConcurrencyLimits;
  now?: () => number;
  /** The mTLS files' contents when already read (the outbound thread gets them from the main thread). */
  tls?: TlsMaterial;
}

/** Outbound delivery in this thread, with its parts exposed for tests. */
export interface Outbound extends OutboundDelivery {
  readonly limiter: ConcurrencyLimiter;
  readonly tokens: OAuth2TokenCache;
  readonly http: OutboundHttpClient;
}

export function createOutbound(config: OutboundConfig, options: OutboundOptions = {}): Outbound {
  const limits = options.limits ?? DEFAULT_CONCURRENCY_LIMITS;
  const http = createOutboundHttpClient({
    timeoutMs: config.callbackTimeoutMs,
    allowPrivateNetworks: config.callbackAllowPrivateNetworks,
    connectionsPerOrigin: limits.perAddress,
    ...(config.outboundProxy ? { proxy: config.outboundProxy, proxyBypass: config.outboundProxyBypass ?? [] } : {}),
    ...(options.tls ?? loadTlsMaterial(config)),
  });
  const now = options.now ?? Date.now;
  const tokens = new OAuth2TokenCache({ http, now });
  const limiter = createConcurrencyLimiter(limits);

  return {
    async deliverAttempt(input) {
      let hostname: string;
      try {
        hostname = new URL(input.url).hostname.toLowerCase();
      } catch {
        return { ok: false, latencyMs: 0, error: 'callback URL is not a valid absolute URL' };
      }
      // Counted against the address the call connects to (the resolver remembers it for the
      // connection); a host that does not resolve or is refused fails at once in the call itself.
      const address = await http.resolver.resolve(hostname).then(
        (addresses) => addresses[0]!.address,
        () => hostname,
      );
      return limiter.run({ account: input.accountId, address }, () => deliverAttempt(input, { http, tokens, now }));
    },
    limiter,
    tokens,
    http,
    close: () => http.close(),
  };
}
