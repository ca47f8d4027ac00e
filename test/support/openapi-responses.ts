// The drift hook (README.md, "The OpenAPI document"): every response a test receives
// through `api()` is checked against what the service's own OpenAPI document says for that
// operation and status, so a route that answers an undocumented status or shape fails the test
// that saw it. The document is fetched once per server (GET /openapi.json) and compiled with Ajv
// (draft 2020-12, as OpenAPI 3.1 schemas are).
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';

const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule) as unknown as (ajv: unknown) => void;

interface MediaType {
  schema?: object;
}
interface Operation {
  operationId?: string;
  responses?: Record<string, { content?: Record<string, MediaType> }>;
}
export interface Document {
  paths: Record<string, Record<string, Operation>>;
}

interface Route {
  pattern: RegExp;
  params: number;
  path: string;
  methods: Record<string, Operation>;
}

export interface ResponseChecker {
  /** Why the response does not match the document, or undefined when it does (or the path is not documented). */
  check(method: string, url: string, status: number, contentType: string | null, text: string, body: unknown): string | undefined;
}

const DOC_ID = 'openapi.json';

export function makeChecker(document: Document): ResponseChecker {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false, validateFormats: true });
  addFormats(ajv);
  ajv.addSchema(document, DOC_ID);
  const compiled = new Map<string, ValidateFunction>();
  const routes: Route[] = Object.entries(document.paths).map(([path, methods]) => ({
    path,
    methods,
    params: (path.match(/\{/g) ?? []).length,
    pattern: new RegExp(`^${path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}/?$`),
  }));
  // A literal segment wins over a parameter, as in the router.
  routes.sort((a, b) => a.params - b.params);
  const pointer = (...parts: string[]) => parts.map((p) => p.replaceAll('~', '~0').replaceAll('/', '~1')).join('/');

  return {
    check(method, url, status, contentType, text, body) {
      const path = new URL(url).pathname;
      const route = routes.find((r) => r.pattern.test(path) && r.methods[method.toLowerCase()]);
      if (!route) return undefined; // not a documented operation (an unknown route's 404, the console, /docs)
      const operation = route.methods[method.toLowerCase()]!;
      const name = `${method.toUpperCase()} ${route.path} (${operation.operationId ?? 'no operationId'})`;
      const responses = operation.responses ?? {};
      const key = [String(status), `${String(status)[0]}XX`, `${String(status)[0]}xx`, 'default'].find((k) => responses[k] !== undefined);
      if (!key) return `${name} answered ${status}, which the OpenAPI document does not list (it lists ${Object.keys(responses).join(', ')}): ${text.slice(0, 300)}`;
      if (!text) return undefined;
      const content = responses[key]!.content;
      if (!content) return `${name} answered ${status} with a body, but the document describes none: ${text.slice(0, 300)}`;
      const mediaType = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
      const documented = Object.keys(content).find((type) => type.toLowerCase() === mediaType);
      if (!documented) return `${name} answered ${status} as ${mediaType || 'no content type'}; the document lists ${Object.keys(content).join(', ')}`;
      if (!content[documented]!.schema || !/json/.test(mediaType)) return undefined;
      const ref = `${DOC_ID}#/${pointer('paths', route.path, method.toLowerCase(), 'responses', key, 'content', documented, 'schema')}`;
      const validate = compiled.get(ref) ?? ajv.compile({ $ref: ref });
      compiled.set(ref, validate);
      if (validate(body)) return undefined;
      const errors = (validate.errors ?? []).slice(0, 5).map((e) => `${e.instancePath || '(body)'} ${e.message}${e.params ? ` ${JSON.stringify(e.params)}` : ''}`);
      return `${name} answered ${status} with a body the document's schema refuses: ${errors.join('; ')}\nbody: ${text.slice(0, 500)}`;
    },
  };
}

const checkers = new Map<string, Promise<ResponseChecker | undefined>>();

/** The checker of the server at `base` (its /openapi.json, fetched once), or undefined when it serves no document. */
export function responseChecker(base: string): Promise<ResponseChecker | undefined> {
  const origin = new URL(base).origin;
  let checker = checkers.get(origin);
  if (!checker) {
    checker = fetch(`${origin}/openapi.json`)
      .then(async (response) => (response.status === 200 && (response.headers.get('content-type') ?? '').includes('json') ? makeChecker((await response.json()) as Document) : undefined))
      .catch(() => undefined);
    checkers.set(origin, checker);
  }
  return checker;
}

/** Forgets the server at `base` (its port may be reused by another test app). */
export function forgetResponseChecker(base: string): void {
  checkers.delete(new URL(base).origin);
}
