import { randomUUID, sign, verify } from 'node:crypto';
import { KeyStore, TOKEN_ALGORITHM } from './key-store.js';
import { DomainError } from '../domain/errors.js';

/** What a verified access token says about its bearer. */
export interface AccessTokenClaims {
  clientId: string;
  accountId: string;
  scopes: string[];
  /** `iat`, epoch ms: a token issued before its account or client was reactivated is refused (docs/tokens.md). */
  issuedAt: number;
  expiresAt: number;
}

/** Why a bearer token is refused; the bearer authentication (http/plugins/auth.ts) adds the challenge. */
export class InvalidTokenError extends DomainError {
  constructor(message: string) {
    super('unauthenticated', message);
    this.name = 'InvalidTokenError';
  }
}

const ACCESS_TOKEN_TYPE = 'at+jwt';
/** Verified tokens remembered per process; a client reuses its token for its whole lifetime. */
const VERIFIED_CACHE_SIZE = 10_000;
/** At most this many distinct grants share tokens within one second. */
const MINTED_CACHE_SIZE = 10_000;
/** Tolerated clock difference between processes for `iat`, in seconds. */
const CLOCK_SKEW_S = 30;

function encodeSegment(value: object): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

function decodeSegment(segment: string): Record<string, unknown> {
  const value: unknown = JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'));
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new InvalidTokenError('malformed token');
  return value as Record<string, unknown>;
}

/**
 * RFC 9068 JWT access tokens (`typ: at+jwt`, EdDSA, `kid`), signed and verified with node:crypto
 * directly: it is the hot path of every request. Verification accepts only EdDSA with a known
 * kid, checks typ, iss, aud, exp and iat; tests cross-check the tokens with `jose`.
 */
export class AccessTokens {
  /**
   * token → claims of tokens already verified. An Ed25519 verification is a large share of the
   * CPU of an authenticated request; a Map lookup costs next to nothing. Keyed by the whole token (the
   * signature included), re-checked for expiry and for its key still being published.
   */
  readonly #verified = new Map<string, AccessTokenClaims & { kid: string }>();
  /**
   * Tokens minted during the current second, by key, client, account and scope. A second request
   * for the same grant within that second gets the same token: its claims (iat, exp, scope) would
   * be identical apart from jti, and an Ed25519 signature is most of the endpoint's cost.
   * A client that fetches a token per call is thereby signed for once per second.
   */
  #mintedSecond = -1;
  readonly #minted = new Map<string, string>();

  constructor(
    private readonly keys: KeyStore,
    private readonly issuer: string,
    private readonly ttlMs: number,
    private readonly clock: () => number = Date.now,
  ) {}

  get ttlSeconds(): number {
    return Math.floor(this.ttlMs / 1000);
  }

  /** `ttlSeconds`: the token's lifetime when it is not TOKEN_TTL (a console link's token, docs/console.md). */
  async issue(input: { clientId: string; accountId: string; scopes: string[]; ttlSeconds?: number }): Promise<string> {
    const { kid, key } = await this.keys.signer();
    const now = Math.floor(this.clock() / 1000);
    if (now !== this.#mintedSecond) {
      this.#minted.clear();
      this.#mintedSecond = now;
    }
    const ttlSeconds = input.ttlSeconds ?? this.ttlSeconds;
    const grant = `${kid} ${input.clientId} ${input.accountId} ${ttlSeconds} ${input.scopes.join(' ')}`;
    const minted = this.#minted.get(grant);
    if (minted !== undefined) return minted;
    const header = encodeSegment({ alg: TOKEN_ALGORITHM, typ: ACCESS_TOKEN_TYPE, kid });
    const payload = encodeSegment({
      iss: this.issuer,
      sub: input.clientId,
      aud: this.issuer,
      exp: now + ttlSeconds,
      iat: now,
      jti: randomUUID(),
      client_id: input.clientId,
      scope: input.scopes.join(' '),
      account_id: input.accountId,
    });
    const signature = sign(null, Buffer.from(`${header}.${payload}`), key).toString('base64url');
    const token = `${header}.${payload}.${signature}`;
    if (this.#minted.size < MINTED_CACHE_SIZE) this.#minted.set(grant, token);
    return token;
  }

  async verify(token: string): Promise<AccessTokenClaims> {
    const cached = this.#verified.get(token);
    if (cached && cached.expiresAt > this.clock() && this.keys.isLoadedVerifier(cached.kid)) {
      const { kid: _kid, ...claims } = cached;
      return claims;
    }
    if (cached) this.#verified.delete(token);
    const claims = await this.#verifySignatureAndClaims(token);
    if (this.#verified.size >= VERIFIED_CACHE_SIZE) this.#verified.delete(this.#verified.keys().next().value!);
    this.#verified.set(token, claims);
    const { kid: _kid, ...result } = claims;
    return result;
  }

  async #verifySignatureAndClaims(token: string): Promise<AccessTokenClaims & { kid: string }> {
    const parts = token.split('.');
    if (parts.length !== 3) throw new InvalidTokenError('malformed token');
    const [headerPart, payloadPart, signaturePart] = parts as [string, string, string];
    let header: Record<string, unknown>;
    let payload: Record<string, unknown>;
    try {
      header = decodeSegment(headerPart);
      payload = decodeSegment(payloadPart);
    } catch {
      throw new InvalidTokenError('malformed token');
    }
    if (header.alg !== TOKEN_ALGORITHM) throw new InvalidTokenError('unsupported token algorithm');
    if (header.typ !== ACCESS_TOKEN_TYPE) throw new InvalidTokenError('not an access token (typ)');
    if (header.crit !== undefined) throw new InvalidTokenError('unsupported critical header');
    const entry = typeof header.kid === 'string' ? await this.keys.verifier(header.kid) : undefined;
    if (!entry) throw new InvalidTokenError('unknown signing key');
    const signature = Buffer.from(signaturePart, 'base64url');
    if (signature.length !== 64 || !verify(null, Buffer.from(`${headerPart}.${payloadPart}`), entry.key, signature)) {
      throw new InvalidTokenError('token signature invalid');
    }
    const now = this.clock() / 1000;
    if (payload.iss !== this.issuer) throw new InvalidTokenError('token issuer invalid');
    const audience = Array.isArray(payload.aud) ? payload.aud : [payload.aud];
    if (!audience.includes(this.issuer)) throw new InvalidTokenError('token audience invalid');
    if (typeof payload.exp !== 'number' || payload.exp <= now) throw new InvalidTokenError('token expired');
    if (typeof payload.iat !== 'number' || payload.iat > now + CLOCK_SKEW_S) throw new InvalidTokenError('token issued in the future');
    if (typeof payload.client_id !== 'string' || typeof payload.account_id !== 'string' || typeof payload.jti !== 'string') {
      throw new InvalidTokenError('token lacks client, account or jti');
    }
    const scopes = typeof payload.scope === 'string' ? payload.scope.split(' ').filter(Boolean) : [];
    return { clientId: payload.client_id, accountId: payload.account_id, scopes, issuedAt: payload.iat * 1000, expiresAt: payload.exp * 1000, kid: entry.kid };
  }
}
