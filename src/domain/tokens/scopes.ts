import { editDistance } from '../edit-distance.js';

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

/**
 * The scope most likely meant by an unknown one: the same in another case, a singular/plural slip
 * on either side of the colon (`request:write` → `requests:write`), or one at most two edits away
 * (`requests:wrte`); the closest wins, undefined when none is that close.
 */
function nearestScope(unknown: string): Scope | undefined {
  const lower = unknown.toLowerCase();
  const singular = (word: string) => word.replace(/s$/, '');
  const shape = (scope: string) => scope.split(':').map(singular).join(':');
  let best: { scope: Scope; distance: number } | undefined;
  for (const scope of SCOPES) {
    const distance = scope === lower ? 0 : shape(scope) === shape(lower) ? 1 : editDistance(lower, scope);
    if (distance <= 2 && (!best || distance < best.distance)) best = { scope, distance };
  }
  return best?.scope;
}

/**
 * Why `requested` (a parsed scope list holding at least one unknown name) is refused, in one
 * sentence: a comma-separated list is named as such (scopes are separated by spaces), with the
 * list to send when every part is, or nearly is, a scope; otherwise each unknown name gets its
 * nearest scope (`unknown scope: request:write (did you mean requests:write?)`).
 */
export function unknownScopesMessage(requested: readonly string[]): string {
  if (requested.some((name) => name.includes(','))) {
    const parts = requested.flatMap((name) => name.split(',')).filter((s) => s.length > 0);
    const fixed = parts.map((name) => (isScope(name) ? name : nearestScope(name)));
    const stillUnknown = parts.filter((name, i) => fixed[i] === undefined);
    const separator = 'scopes are separated by spaces, not commas';
    return stillUnknown.length === 0 ? `${separator}: send "${[...new Set(fixed)].join(' ')}"` : `${separator}; ${unknownScopesMessage(stillUnknown)}`;
  }
  const named = requested
    .filter((name) => !isScope(name))
    .map((name) => {
      const near = nearestScope(name);
      return near ? `${name} (did you mean ${near}?)` : name;
    });
  return `unknown scope${named.length > 1 ? 's' : ''}: ${named.join(', ')}`;
}
