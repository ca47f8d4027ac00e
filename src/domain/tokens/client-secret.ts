import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** Prefix that makes a leaked secret recognisable to secret scanners and people. */
export const CLIENT_SECRET_PREFIX = 'rrs_cs_';

/** 256 random bits, base64url. */
export function generateClientSecret(): string {
  return CLIENT_SECRET_PREFIX + randomBytes(32).toString('base64url');
}

/** Secrets are high-entropy, so a plain SHA-256 is enough (no password stretching needed). */
export function hashClientSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

export function secretMatches(secret: string, storedHash: string | null): boolean {
  if (!storedHash) return false;
  const candidate = Buffer.from(hashClientSecret(secret), 'hex');
  const stored = Buffer.from(storedHash, 'hex');
  return candidate.length === stored.length && timingSafeEqual(candidate, stored);
}
