import { createHash } from 'node:crypto';
import type { OAuth2ClientCredentials } from './callback-auth.js';
import { DeliveryFailure } from './delivery-failure.js';
import { USER_AGENT, type OutboundHttpClient } from './http-client.js';

/**
 * Access tokens for callbacks protected by OAuth2 client credentials (RFC 6749 §4.4), fetched
 * from the subscription's token URL and shared by every delivery to the same client:
 * - cached per (token URL, client_id, audience, secret hash, client-certificate use) until shortly
 *   before `expires_in` ends;
 * - single-flight: concurrent callers for one key wait on the same token request;
 * - `invalidate(client, token)` drops exactly the token a callback refused with 401, so 50
 *   concurrent 401s cause one refresh, not 50.
 */

export interface TokenRequestOptions {
  /** Present the service certificate to the token endpoint (mtls.twoFactor.oauth2). */
  useClientCertificate: boolean;
}

/** Token responses are small JSON; anything larger is not a token response. */
const MAX_TOKEN_RESPONSE_BYTES = 64 * 1024;
/** RFC 6749 makes `expires_in` optional; without it a token is trusted this long (a 401 still forces a refresh). */
const DEFAULT_LIFETIME_MS = 5 * 60_000;
/** Refresh this long before expiry (at most), so a token does not expire in flight. */
const MAX_REFRESH_MARGIN_MS = 60_000;

interface CachedToken {
  accessToken: string;
  refreshAt: number;
}

export interface OAuth2TokenCacheOptions {
  http: OutboundHttpClient;
  now?: () => number;
}

export class OAuth2TokenCache {
  private readonly tokens = new Map<string, CachedToken>();
  private readonly pending = new Map<string, Promise<CachedToken>>();
  private readonly http: OutboundHttpClient;
  private readonly now: () => number;
  /** Token requests sent, for metrics and tests. */
  requestCount = 0;

  constructor(options: OAuth2TokenCacheOptions) {
    this.http = options.http;
    this.now = options.now ?? Date.now;
  }

  async getToken(client: OAuth2ClientCredentials, options: TokenRequestOptions): Promise<string> {
    const key = cacheKey(client, options);
    const cached = this.tokens.get(key);
    if (cached && cached.refreshAt > this.now()) return cached.accessToken;
    let inFlight = this.pending.get(key);
    if (!inFlight) {
      // The token is cached before the pending entry goes, so no caller sees neither.
      // Failures are not cached: the next attempt asks again.
      inFlight = this.fetchToken(client, options)
        .then((token) => {
          this.tokens.set(key, token);
          return token;
        })
        .finally(() => this.pending.delete(key));
      this.pending.set(key, inFlight);
    }
    return (await inFlight).accessToken;
  }

  /** Forget `rejectedToken` (refused by the callback); a newer token already cached is kept. */
  invalidate(client: OAuth2ClientCredentials, options: TokenRequestOptions, rejectedToken: string): void {
    const key = cacheKey(client, options);
    if (this.tokens.get(key)?.accessToken === rejectedToken) this.tokens.delete(key);
  }

  private async fetchToken(client: OAuth2ClientCredentials, options: TokenRequestOptions): Promise<CachedToken> {
    this.requestCount++;
    const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret });
    if (client.audience) {
      // `audience` is what Auth0/Okta-style servers read; RFC 8707 servers read `resource`, which
      // must be an absolute URI, so it is sent only when the audience is one.
      form.set('audience', client.audience);
      if (isAbsoluteUri(client.audience)) form.set('resource', client.audience);
    }
    const startedAt = this.now();
    let response;
    try {
      response = await this.http.send({
        url: client.url,
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json', 'user-agent': USER_AGENT },
        body: form.toString(),
        useClientCertificate: options.useClientCertificate,
        maxBodyBytes: MAX_TOKEN_RESPONSE_BYTES,
      });
    } catch (error) {
      const reason = error instanceof DeliveryFailure ? error.message : String(error);
      throw new DeliveryFailure(`OAuth2 token request to ${safeUrl(client.url)} failed: ${reason}`, 'TOKEN_REQUEST', { cause: error });
    }
    const parsed = parseJson(response.body.toString('utf8'));
    if (response.statusCode !== 200) {
      const oauthError = typeof parsed?.error === 'string' ? ` ${parsed.error}` : '';
      const description = typeof parsed?.error_description === 'string' ? ` (${parsed.error_description.slice(0, 200)})` : '';
      throw new DeliveryFailure(`OAuth2 token request to ${safeUrl(client.url)} failed: HTTP ${response.statusCode}${oauthError}${description}`, 'TOKEN_REQUEST');
    }
    const accessToken = parsed?.access_token;
    if (typeof accessToken !== 'string' || accessToken.length === 0 || /[\r\n\0]/.test(accessToken)) {
      throw new DeliveryFailure(`OAuth2 token response from ${safeUrl(client.url)} has no usable access_token`, 'TOKEN_REQUEST');
    }
    const tokenType = parsed?.token_type;
    if (typeof tokenType === 'string' && tokenType.toLowerCase() !== 'bearer') {
      throw new DeliveryFailure(`OAuth2 token response from ${safeUrl(client.url)} has token_type ${tokenType.slice(0, 40)}; only Bearer is supported`, 'TOKEN_REQUEST');
    }
    const expiresIn = Number(parsed?.expires_in);
    const lifetimeMs = Number.isFinite(expiresIn) && expiresIn > 0 ? expiresIn * 1000 : DEFAULT_LIFETIME_MS;
    // Counted from when the request was sent: the server's clock started no earlier than that.
    const refreshAt = startedAt + lifetimeMs - Math.min(MAX_REFRESH_MARGIN_MS, lifetimeMs / 10);
    return { accessToken, refreshAt };
  }
}

function cacheKey(client: OAuth2ClientCredentials, options: TokenRequestOptions): string {
  // The secret is part of the key (hashed, never kept in clear in a key) so a rotated secret
  // gets a fresh token instead of one minted for the old credentials.
  const secretHash = createHash('sha256').update(client.client_secret).digest('base64url');
  return JSON.stringify([client.url, client.client_id, client.audience ?? '', secretHash, options.useClientCertificate]);
}

function isAbsoluteUri(value: string): boolean {
  return /^[a-z][a-z0-9+.-]*:[^\s]*$/i.test(value) && !value.includes('#');
}

function parseJson(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return value && typeof value === 'object' ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** The token URL without query or credentials, for messages that end up in the delivery log. */
function safeUrl(raw: string): string {
  try {
    const url = new URL(raw);
    return `${url.origin}${url.pathname}`;
  } catch {
    return '(invalid URL)';
  }
}
