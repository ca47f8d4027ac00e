import { randomUUID } from 'node:crypto';
import { SignJWT, jwtVerify, decodeProtectedHeader, errors as joseErrors } from 'jose';
import { KeyStore, TOKEN_ALGORITHM } from './key-store.js';

/** What a verified access token says about its bearer. */
export interface AccessTokenClaims {
  clientId: string;
  accountId: string;
  scopes: string[];
  expiresAt: number;
}

export class InvalidTokenError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InvalidTokenError';
  }
}

/** RFC 9068 JWT access tokens: `typ: at+jwt`, EdDSA, `kid` in the header. */
export class AccessTokens {
  constructor(
    private readonly keys: KeyStore,
    private readonly issuer: string,
    private readonly ttlMs: number,
    private readonly clock: () => number = Date.now,
  ) {}

  get ttlSeconds(): number {
    return Math.floor(this.ttlMs / 1000);
  }

  async issue(input: { clientId: string; accountId: string; scopes: string[] }): Promise<string> {
    const { kid, key } = await this.keys.signer();
    const now = Math.floor(this.clock() / 1000);
    return new SignJWT({ client_id: input.clientId, scope: input.scopes.join(' '), account_id: input.accountId })
      .setProtectedHeader({ alg: TOKEN_ALGORITHM, typ: 'at+jwt', kid })
      .setIssuer(this.issuer)
      .setSubject(input.clientId)
      .setAudience(this.issuer)
      .setIssuedAt(now)
      .setExpirationTime(now + this.ttlSeconds)
      .setJti(randomUUID())
      .sign(key);
  }

  async verify(token: string): Promise<AccessTokenClaims> {
    let kid: string | undefined;
    try {
      const header = decodeProtectedHeader(token);
      if (header.alg !== TOKEN_ALGORITHM) throw new InvalidTokenError('unsupported token algorithm');
      kid = header.kid;
    } catch (error) {
      if (error instanceof InvalidTokenError) throw error;
      throw new InvalidTokenError('malformed token');
    }
    const entry = kid ? await this.keys.verifier(kid) : undefined;
    if (!entry) throw new InvalidTokenError('unknown signing key');
    try {
      const { payload } = await jwtVerify(token, entry.key, {
        algorithms: [TOKEN_ALGORITHM],
        typ: 'at+jwt',
        issuer: this.issuer,
        audience: this.issuer,
        requiredClaims: ['exp', 'iat', 'sub', 'jti', 'client_id'],
        currentDate: new Date(this.clock()),
      });
      const scopes = typeof payload.scope === 'string' ? payload.scope.split(' ').filter(Boolean) : [];
      if (typeof payload.account_id !== 'string' || typeof payload.client_id !== 'string') {
        throw new InvalidTokenError('token lacks client or account');
      }
      return { clientId: payload.client_id, accountId: payload.account_id, scopes, expiresAt: payload.exp! * 1000 };
    } catch (error) {
      if (error instanceof InvalidTokenError) throw error;
      if (error instanceof joseErrors.JWTExpired) throw new InvalidTokenError('token expired');
      throw new InvalidTokenError('token signature or claims invalid');
    }
  }
}
