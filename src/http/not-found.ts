import type { RouteOptions } from 'fastify';
import { editDistance } from '../domain/edit-distance.js';

/**
 * What a request no route takes is told (the app's not-found handler, plugins/errors.ts):
 *
 * - a path one slip away from a route of the same method (one segment a small edit away, a
 *   singular/plural or case slip; parameters match any value) names that route, as the contract
 *   spells it: `no route for GET /v2/requests/abc/events; did you mean GET /v2/request/{id}/events?`;
 * - a path that exists for other methods names them;
 * - `/` itself is no resource: it answers 200 with where to go (`ROOT_INDEX`), like the root of
 *   GitHub's API, rather than a 404 a first visitor learns nothing from.
 *
 * Only "no such route" gains a hint. A route that exists answers for itself: an unknown resource
 * id and another account's are the same 404 there (docs/subscriptions.md, "Errors"), and nothing
 * here knows of resources. The hint is computed from the route table alone, never from data.
 */

/** What `GET /` answers: the console, the API reference and the machine-readable contract. */
export const ROOT_INDEX = {
  name: 'Reward Request Service',
  console: '/console/',
  docs: '/docs',
  openapi: '/openapi.json',
  token: '/v2/oauth/token',
} as const;

interface KnownRoute {
  method: string;
  segments: string[];
  /** The path as the contract spells it: `/v2/request/{id}/events`. */
  display: string;
}

const segmentsOf = (path: string): string[] => path.replace(/\/+$/, '').split('/');

const isParameter = (segment: string) => segment.startsWith(':');

/** How far a sent segment is from a route's literal one, when it is a likely slip: case, singular/plural, one or two typos (one for short names). */
function slip(sent: string, known: string): number | undefined {
  const lower = sent.toLowerCase();
  if (lower === known || `${lower}s` === known || lower === `${known}s`) return 1;
  if (Math.abs(lower.length - known.length) > 2) return undefined;
  const distance = editDistance(lower, known);
  return distance <= (known.length <= 4 ? 1 : 2) ? distance : undefined;
}

/** The routes of the app, collected as they are registered (`collect`, an onRoute hook), and the hints drawn from them. */
export class RouteTable {
  readonly #routes: KnownRoute[] = [];

  readonly collect = (route: RouteOptions): void => {
    // Wildcard routes (the console's files, /docs assets) take every path under them: nothing to hint.
    if (route.url.includes('*')) return;
    for (const method of [route.method].flat()) {
      if (method === 'HEAD') continue;
      this.#routes.push({ method, segments: segmentsOf(route.url), display: route.url.replace(/:([A-Za-z0-9_]+)/g, '{$1}') });
    }
  };

  /** The hint for `method path` that no route takes, or undefined (`path` without its query string). */
  hint(method: string, path: string): string | undefined {
    const wanted = method === 'HEAD' ? 'GET' : method;
    const sent = segmentsOf(path);
    const near: Array<{ route: KnownRoute; cost: number }> = [];
    const otherMethods: string[] = [];
    for (const route of this.#routes) {
      if (route.segments.length !== sent.length) continue;
      let differing = 0;
      let cost = 0;
      for (let i = 0; i < sent.length && differing <= 1; i++) {
        const known = route.segments[i]!;
        const given = sent[i]!;
        if (isParameter(known) ? given !== '' : known === given) continue;
        const distance = isParameter(known) ? undefined : slip(given, known);
        differing += distance === undefined ? 2 : 1;
        cost += distance ?? 0;
      }
      if (differing === 0 && route.method !== wanted) otherMethods.push(route.method);
      else if (differing === 1 && route.method === wanted) near.push({ route, cost });
    }
    if (otherMethods.length > 0) return `this path takes ${[...new Set(otherMethods)].join(', ')}`;
    if (near.length === 0) return undefined;
    const best = Math.min(...near.map((n) => n.cost));
    const closest = near.filter((n) => n.cost === best).slice(0, 3);
    return `did you mean ${closest.map((n) => `${n.route.method} ${n.route.display}`).join(' or ')}?`;
  }
}
