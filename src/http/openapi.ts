import type { SwaggerTransform, SwaggerTransformObject } from '@fastify/swagger';
import { SCOPES } from '../domain/tokens/scopes.js';
import { HttpProblem } from './problem.js';

/**
 * What the OpenAPI document says beyond each route's own schema, said once for every route
 * (README.md, "The OpenAPI document"): the `V1` operationIds of the /v1 copies, the
 * RFC 9457 problem responses a route can answer (from what the error plugin and the bearer check
 * really answer), `security: []` on public operations and the OAuth2 scope a route requires.
 * It only shapes the document: responses are serialized exactly as before.
 */

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Route-specific problems for the document, by status: `{ 409: 'the subscription is inactive' }`. */
    problems?: Partial<Record<number, string>>;
  }
}

const PROBLEM_CONTENT = 'application/problem+json';

const PROBLEM_SCHEMA = {
  type: 'object' as const,
  description: 'An RFC 9457 problem document',
  required: ['type', 'title', 'status', 'detail'],
  properties: {
    type: { type: 'string' as const, description: 'a URI naming the kind of problem', example: 'https://rewards.dev/problems/bad-request' },
    title: { type: 'string' as const, example: 'Bad Request' },
    status: { type: 'integer' as const, example: 400 },
    detail: { type: 'string' as const, example: 'request body is invalid: body.callback.url is required' },
    errors: {
      type: 'array' as const,
      description: 'the members at fault, for a 400',
      items: {
        type: 'object' as const,
        required: ['path', 'message'],
        properties: { path: { type: 'string' as const, example: 'body.callback.url' }, message: { type: 'string' as const, example: 'is required' } },
      },
    },
  },
};

/** A documented problem response; its example is what the error plugin answers for that status. */
const problem = (status: number, description: string) => ({
  description,
  content: { [PROBLEM_CONTENT]: { schema: { $ref: '#/components/schemas/Problem' }, example: new HttpProblem(status, description).toJSON() } },
});

/** The headers of a `secretBearing` route's success answers, as the document describes them. */
const NO_STORE_HEADERS_DOCUMENTED = {
  'Cache-Control': { type: 'string' as const, enum: ['no-store'], description: 'the answer carries a secret: never stored by a cache' },
  Pragma: { type: 'string' as const, enum: ['no-cache'], description: 'the same, for HTTP/1.0 caches' },
};

/** The OAuth2 scopes, for the client-credentials flow of the `oauth2` security scheme. */
export const SCOPE_DESCRIPTIONS = Object.fromEntries(
  SCOPES.map((scope) => [scope, scope === 'admin' ? 'operator: accounts, clients, experiences, console links, any account (`?accountId=`)' : scope]),
);

type Schema = Record<string, unknown> & { response?: Record<string, unknown>; operationId?: string };

function has(schema: Schema, key: string): boolean {
  return schema[key] !== undefined;
}

/*
 * Named types (README.md, "The OpenAPI document"). A schema with a `title` is a type of the API:
 * the document lists it once, under `components.schemas` by that name, and every request body,
 * response and webhook payload that holds it refers to it with `$ref`, so a generated client has
 * one `Subscription` type rather than a copy per operation named after the operation. `title` is
 * an annotation: neither the validator (Ajv) nor the serializer (fast-json-stringify) reads it, so
 * routes validate and serialize exactly as before; `$id` would take part in their reference
 * resolution. A title is a type name (PascalCase); two different schemas with one title are a
 * mistake, refused when the second route is registered.
 */

const COMPONENT_NAME = /^[A-Z][A-Za-z0-9]*$/;
const COMPONENTS_PATH = '#/components/schemas/';
/** The keywords whose value is a schema, a list of schemas, or a map of name → schema. */
const SUBSCHEMA = ['items', 'additionalProperties', 'unevaluatedProperties', 'not', 'contains', 'if', 'then', 'else', 'propertyNames'];
const SUBSCHEMA_LIST = ['anyOf', 'oneOf', 'allOf', 'prefixItems'];
const SUBSCHEMA_MAP = ['properties', 'patternProperties', '$defs', 'definitions'];

type Json = Record<string, unknown>;
const isJsonObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

/** A component: its name, its schema with its own titled members referenced, and that schema's JSON. */
interface Named {
  name: string;
  body: Json;
  json: string;
}
type Meet = (named: Named) => void;

/**
 * A titled schema → the components it makes, itself last. Schemas are constants shared by the
 * routes of every app a process builds (the tests build many), so each is walked once.
 */
const namedOf = new WeakMap<Json, Named[]>();

/**
 * `schema` with every titled schema in it (itself too, unless `keepRoot`) replaced by a `$ref` to
 * its component; `meet` sees each titled schema found, with its own titled members referenced.
 */
function referenceComponents(schema: unknown, meet: Meet, keepRoot = false): unknown {
  if (!isJsonObject(schema)) return schema;
  const name = schema.title;
  if (!keepRoot && typeof name === 'string') {
    if (!COMPONENT_NAME.test(name)) throw new Error(`a schema's title names its type in the OpenAPI document: "${name}" is not a type name (PascalCase letters and digits)`);
    let named = namedOf.get(schema);
    if (!named) {
      const found: Named[] = [];
      const body = referenceComponents(schema, (inner) => found.push(inner), true) as Json;
      named = [...found, { name, body, json: JSON.stringify(body) }];
      namedOf.set(schema, named);
    }
    for (const component of named) meet(component);
    return { $ref: `${COMPONENTS_PATH}${name}` };
  }
  const out: Json = { ...schema };
  for (const key of SUBSCHEMA) if (key in out) out[key] = referenceComponents(out[key], meet);
  for (const key of SUBSCHEMA_LIST) if (Array.isArray(out[key])) out[key] = (out[key] as unknown[]).map((member) => referenceComponents(member, meet));
  for (const key of SUBSCHEMA_MAP) {
    const map = out[key];
    if (isJsonObject(map)) out[key] = Object.fromEntries(Object.entries(map).map(([member, value]) => [member, referenceComponents(value, meet)]));
  }
  return out;
}

/** A route's response: a schema, or `{ description, content: { [type]: { schema } } }`. */
function referenceResponse(response: unknown, meet: Meet): unknown {
  if (!isJsonObject(response) || !isJsonObject(response.content)) return referenceComponents(response, meet);
  const content = Object.fromEntries(Object.entries(response.content).map(([type, media]) => [type, isJsonObject(media) ? { ...media, schema: referenceComponents(media.schema, meet) } : media]));
  return { ...response, content };
}

/** The references of the route transform: titled schemas are collected by `DocumentComponents` as the routes are registered. */
const ignore = () => {};
const referenced = (schema: unknown) => referenceComponents(schema, ignore);

/**
 * The `components.schemas` of one app's document: `Problem`, then each titled schema of a route's
 * body or responses as the route is registered (an `onRoute` hook), and of the webhook payloads.
 * @fastify/swagger reads the map when it builds the document, after every route is registered, and
 * converts each schema as it converts a route's.
 */
export class DocumentComponents {
  readonly schemas: Record<string, Json> = { Problem: PROBLEM_SCHEMA };
  readonly #json = new Map<string, string>();

  readonly #meet = ({ name, body, json }: Named) => {
    const known = this.#json.get(name);
    if (known === undefined) {
      this.#json.set(name, json);
      this.schemas[name] = body;
    } else if (known !== json) {
      throw new Error(`two different schemas are titled "${name}": a title names one type of the OpenAPI document; give the other its own title`);
    }
  };

  /** The `onRoute` hook: collects the titled schemas of the route's body and responses. */
  readonly collectRoute = (route: { schema?: unknown }): void => {
    const schema = route.schema as Schema | undefined;
    if (!schema || schema.hide) return;
    referenceComponents(schema.body, this.#meet);
    for (const response of Object.values(schema.response ?? {})) referenceResponse(response, this.#meet);
  };

  /** The `webhooks` map with each payload schema collected and referenced. */
  webhooks<T extends Record<string, { post: { requestBody: { content: Record<string, { schema: object }> } } }>>(webhooks: T): T {
    return Object.fromEntries(
      Object.entries(webhooks).map(([event, item]) => [
        event,
        {
          ...item,
          post: {
            ...item.post,
            requestBody: {
              ...item.post.requestBody,
              content: Object.fromEntries(Object.entries(item.post.requestBody.content).map(([type, media]) => [type, { ...media, schema: referenceComponents(media.schema, this.#meet) }])),
            },
          },
        },
      ]),
    ) as T;
  }
}

interface Media {
  schema?: { $ref?: string };
  example?: unknown;
  examples?: unknown;
}
interface DocumentedOperation {
  requestBody?: { description?: string; required?: boolean; content?: Record<string, Media> };
  [OPTIONAL_BODY]?: boolean;
  responses?: Record<string, { description?: string; content?: Record<string, Media> }>;
}

/**
 * @fastify/swagger's `transformObject`. A body or answer that is one component as a whole shows
 * that component's examples and description where the operation is read (a media type's
 * `example`/`examples`, the response's description), as an inline schema's are: the converter
 * takes them from the schema it is given, which is now only a `$ref`.
 */
export const documentObject: SwaggerTransformObject = (documentObject) => {
  if (!('openapiObject' in documentObject)) return documentObject.swaggerObject;
  const { openapiObject } = documentObject;
  const document = openapiObject as unknown as {
    components?: { schemas?: Record<string, Json> };
    paths?: Record<string, Record<string, DocumentedOperation>>;
    webhooks?: Record<string, Record<string, DocumentedOperation>>;
  };
  const schemas = document.components?.schemas ?? {};
  const componentOf = (media: Media): Json | undefined => (media.schema?.$ref?.startsWith(COMPONENTS_PATH) ? schemas[media.schema.$ref.slice(COMPONENTS_PATH.length)] : undefined);
  const describe = (holder: { description?: string; content?: Record<string, Media> }, placeholder: string | undefined) => {
    for (const media of Object.values(holder.content ?? {})) {
      const component = componentOf(media);
      if (!component) continue;
      const examples: unknown[] = Array.isArray(component.examples) ? component.examples : [];
      if (media.example === undefined && media.examples === undefined) {
        if (examples.length === 1) media.example = examples[0];
        else if (examples.length > 1) media.examples = Object.fromEntries(examples.map((value, i) => [`example${i + 1}`, { value }]));
      }
      if (typeof component.description === 'string' && holder.description === placeholder) holder.description = component.description;
    }
  };
  for (const items of [document.paths, document.webhooks]) {
    for (const item of Object.values(items ?? {})) {
      for (const operation of Object.values(item)) {
        if (operation.requestBody) describe(operation.requestBody, undefined);
        // @fastify/swagger marks every body required; a route with config.optionalBody takes none (optional-body.ts).
        if (operation[OPTIONAL_BODY]) {
          if (operation.requestBody) operation.requestBody.required = false;
          delete operation[OPTIONAL_BODY];
        }
        for (const response of Object.values(operation.responses ?? {})) describe(response, 'Default Response');
      }
    }
  }
  return openapiObject;
};

/** Set on an operation by `documentRoute` (an `x-` key, which @fastify/swagger copies) and removed by `documentObject`. */
const OPTIONAL_BODY = 'x-optional-body';

/** @fastify/swagger's `transform`: the document's view of one route. */
export const documentRoute: SwaggerTransform = ({ schema, url, route }) => {
  const original = (schema ?? {}) as Schema;
  if (original.hide) return { schema: original, url };
  const out: Schema = { ...original };
  if (has(out, 'body')) out.body = referenced(out.body);
  if (route.config?.optionalBody) out[OPTIONAL_BODY] = true;
  const isV1 = url.startsWith('/v1/');
  if (out.operationId && isV1) out.operationId = `${out.operationId}V1`;
  const scope = route.config?.scope;
  const isToken = url.endsWith('/oauth/token');
  const response: Record<string, unknown> = Object.fromEntries(Object.entries(original.response ?? {}).map(([status, schema]) => [status, referenceResponse(schema, ignore)]));
  const add = (status: number, description: string) => {
    if (response[String(status)] === undefined) response[String(status)] = problem(status, description);
  };
  if (scope !== undefined) {
    out.security = scope === 'authenticated' ? [{ bearerAuth: [] }, { oauth2: [] }] : [{ bearerAuth: [] }, { oauth2: [scope] }];
    add(
      400,
      has(out, 'body') || has(out, 'querystring') || has(out, 'params') || has(out, 'headers')
        ? 'the request is invalid (each member at fault in `errors`), or the Authorization header is malformed'
        : 'the Authorization header is malformed',
    );
    add(401, 'no access token, or an invalid or expired one (with a `WWW-Authenticate: Bearer` challenge)');
    add(403, scope === 'authenticated' ? 'the token may not be used here' : `the token lacks the scope \`${scope}\``);
    // The bearer check answers 404 for an `accountId` query naming an unknown account (or any other account, for a non-operator).
    add(
      404,
      has(out, 'params') ? 'not found (or another account’s), or the `accountId` given is unknown' : 'the `accountId` given is unknown, or not the caller’s (only operators act for other accounts)',
    );
  } else {
    out.security = [];
    if (!isToken) add(400, 'the request is invalid, or its URL is malformed (not UTF-8, a NUL character)');
  }
  if (has(out, 'body') && !isToken) {
    add(413, 'the body is larger than 1 MiB');
    add(415, 'the body is not `application/json`');
  }
  for (const [status, description] of Object.entries(route.config?.problems ?? {})) if (description) add(Number(status), description);
  // An answer that carries a secret says so in its headers (secret-bearing.ts).
  if (route.config?.secretBearing) {
    for (const [status, schema] of Object.entries(response)) if (/^2/.test(status)) response[status] = { ...(schema as object), headers: NO_STORE_HEADERS_DOCUMENTED };
  }
  if (scope !== undefined || url === '/health/ready') add(503, 'the database is unavailable right now; nothing was stored, retry after `Retry-After` seconds');
  out.response = response;
  return { schema: out, url };
};
