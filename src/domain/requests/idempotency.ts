import { createHash } from 'node:crypto';

/** How long an Idempotency-Key replays its first response (PRODUCT.md §6). */
export const IDEMPOTENCY_TTL_MS = 24 * 3_600_000;

/** JSON with object keys sorted, so `{"a":1,"b":2}` and `{"b":2,"a":1}` are the same body. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const record = value as Record<string, unknown>;
  const entries = Object.keys(record)
    .sort()
    .filter((key) => record[key] !== undefined)
    .map((key) => `${JSON.stringify(key)}:${canonicalJson(record[key])}`);
  return `{${entries.join(',')}}`;
}

export function bodyHash(body: unknown): string {
  return createHash('sha256').update(canonicalJson(body)).digest('base64url');
}
