/** Every scope a client can hold (PRODUCT.md §3). `admin` is the operator's and implies the rest. */
export const SCOPES = ['subscriptions:read', 'subscriptions:write', 'requests:read', 'requests:write', 'events:read', 'events:write', 'admin'] as const;

export type Scope = (typeof SCOPES)[number];

/** Scopes given to a client created without an explicit list: everything but `admin`. */
export const DEFAULT_CLIENT_SCOPES: Scope[] = SCOPES.filter((s) => s !== 'admin');

export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}

export function parseScopeList(text: string): string[] {
  return [...new Set(text.split(' ').filter((s) => s.length > 0))];
}

export function hasScope(granted: readonly string[], needed: Scope): boolean {
  return granted.includes(needed) || granted.includes('admin');
}
