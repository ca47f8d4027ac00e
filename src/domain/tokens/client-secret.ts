import { hash, randomBytes, timingSafeEqual } from 'node:crypto';

/** Prefix that makes a leaked secret recognisable to secret scanners and people. */
const CLIENT_SECRET_PREFIX = 'rrs_cs_';

/** 256 random bits, base64url. */
export function generateClientSecret(): string {
  return CLIENT_SECRET_PREFIX + randomBytes(32).toString('base64url');
}

/**
 * Secrets are high-entropy, so a plain SHA-256 is enough (no password stretching needed). The
 * one-shot `hash` is faster than a Hash object, and this runs on every token request.
 */
export function hashClientSecret(secret: string): string {
  return hash('sha256', secret, 'hex');
}

export function secretMatches(secret: string, storedHash: string | null): boolean {
  if (!storedHash) return false;
  const candidate = hash('sha256', secret, 'buffer');
  const stored = Buffer.from(storedHash, 'hex');
  return candidate.length === stored.length && timingSafeEqual(candidate, stored);
}
