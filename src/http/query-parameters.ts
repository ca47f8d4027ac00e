import type { RouteOptions } from 'fastify';
import { editDistance } from '../domain/edit-distance.js';

/**
 * Every route refuses the query parameters it does not take: a 400 naming each of them
 * (`querystring.account` "is not a known parameter; did you mean accountId?"), never an answer
 * that quietly ignored them. A typo in a filter (`?stauts=failed`) or in the operator's
 * `?accountId=` (`?account=`) would otherwise answer 200 with something else than was asked for:
 * every notification, or the operator's own list.
 *
 * Done once for every route, as it is registered (`closeQueryString`, an `onRoute` hook of the
 * whole app), so no route can forget it: a route with a querystring schema gets it closed
 * (`additionalProperties: false`), a route without one gets an empty closed one, and the text
 * validator refuses what a closed schema does not name (src/schema-validation.ts) instead of
 * dropping it. Request bodies are not touched here.
 *
 * Taking any query parameter, on purpose (`FREE_QUERY_STRING`):
 * - the pages a browser loads, whose query string is the page's own, not the service's:
 *   `/console/…`, the console's files, whose client-side router keeps its filters in the page's
 *   query string (docs/console.md); `/docs…`, the API reference page (@fastify/swagger-ui);
 * - the token endpoint, `POST /v1|v2/oauth/token`: RFC 6749 §3.2 lets a token endpoint's URI
 *   carry a query component, which OAuth2 libraries keep when they post to it; the endpoint reads
 *   its parameters from the body only, so a credential sent in the query string instead is missing
 *   from the body and answered as such (`invalid_request`, `invalid_client`; v2's required
 *   `scope` likewise), never used.
 *   A query string is also what takes a token request past the server's fast path to the
 *   Fastify route (token-fast-path.ts), which answers the same.
 * Everything else is strict, the health checks, /metrics, the JWKS and /openapi.json included:
 * none of them reads a query parameter, and a probe or client configured with one learns it at
 * once, from a 400 that names it.
 */

/** Routes that take any query parameter (see above). */
const FREE_QUERY_STRING = [/^\/console(\/|$)/, /^\/docs(\/|$)/, /^\/v[12]\/oauth\/token$/];

const takesAnyQueryParameter = (url: string): boolean => FREE_QUERY_STRING.some((pattern) => pattern.test(url));

type ObjectSchema = Record<string | symbol, unknown> & { properties?: Record<string, unknown> };

/** An onRoute hook: closes the route's querystring schema, or gives it an empty closed one. Idempotent. */
export function closeQueryString(route: RouteOptions): void {
  if (takesAnyQueryParameter(route.url)) return;
  const schema = (route.schema ?? {}) as Record<string, unknown>;
  const querystring = schema.querystring as ObjectSchema | undefined;
  if (querystring?.additionalProperties === false) return;
  // A copy: a querystring schema object is often shared by several routes.
  route.schema = { ...schema, querystring: querystring ? { ...querystring, additionalProperties: false } : { type: 'object', properties: {}, additionalProperties: false } };
}

/**
 * Adds a parameter every route of a scope takes (`accountId` on the bearer-protected routes)
 * to the route's querystring schema, unless it names it already. Keeps the schema closed or open
 * as it was, so it does not matter which of the two hooks runs first.
 */
export function addQueryParameter(route: RouteOptions, name: string, parameter: unknown): void {
  const schema = (route.schema ?? {}) as Record<string, unknown>;
  const querystring = (schema.querystring as ObjectSchema | undefined) ?? { type: 'object', properties: {} };
  if (querystring.properties?.[name] !== undefined) return;
  route.schema = { ...schema, querystring: { ...querystring, properties: { ...querystring.properties, [name]: parameter } } };
}

/**
 * The parameter the caller most likely meant: the same name in another case, one that starts
 * with the other (`account` → `accountId`, `experiences` → `experience`), or one a typo or two
 * away (`stauts` → `status`); undefined when none is close.
 */
function closestParameter(name: string, known: readonly string[]): string | undefined {
  const lower = name.toLowerCase();
  const same = known.find((k) => k.toLowerCase() === lower);
  if (same) return same;
  if (lower.length >= 3) {
    const prefix = known.find((k) => k.toLowerCase().startsWith(lower) || lower.startsWith(k.toLowerCase()));
    if (prefix) return prefix;
  }
  let best: { name: string; distance: number } | undefined;
  for (const candidate of known) {
    const d = editDistance(lower, candidate.toLowerCase());
    if (d <= (Math.min(lower.length, candidate.length) >= 5 ? 2 : 1) && (!best || d < best.distance)) best = { name: candidate, distance: d };
  }
  return best?.name;
}

/** What is wrong with the unknown parameter `name` of a route that takes `known`, in words. */
export function unknownParameterMessage(name: string, known: readonly string[]): string {
  const meant = closestParameter(name, known);
  if (meant) return `is not a known parameter; did you mean ${meant}?`;
  return known.length === 0 ? 'is not a known parameter; this route takes no query parameters' : `is not a known parameter; this route takes ${known.join(', ')}`;
}
