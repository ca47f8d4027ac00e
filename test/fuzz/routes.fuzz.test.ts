// needs: database
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { sql } from 'kysely';
import { testDialects } from '../support/databases.js';
import { insertExperience } from '../support/experiences.js';
import { api, startTestApp, type ClientCredentials, type TestApp } from '../support/test-app.js';

/**
 * Property-based fuzzing of every operation of the service's own OpenAPI document: bodies shaped
 * like the operation's schema with members replaced by wrong types, unicode edge cases, huge and
 * tiny numbers, nulls and deep nesting; malformed and huge JSON; odd content types; bad ids and
 * query strings; with and without a token. Invariants, for every case: no 5xx, an answer within
 * 10 s, an error that is a problem document naming what is wrong (an RFC 6749 error body at the
 * token endpoints), and a database that a rejected request left exactly as it was.
 *
 * FUZZ_RUNS (cases per operation, default 25) and FUZZ_SEED (default fixed) bound the run:
 * `FUZZ_RUNS=300 npm test -- fuzz` is the long variant (docs/reliability.md).
 */

const RUNS = Number(process.env.FUZZ_RUNS ?? 25);
const SEED = Number(process.env.FUZZ_SEED ?? 20261124);
const TIMEOUT_MS = 10_000;

type Schema = { type?: string | string[]; properties?: Record<string, Schema>; items?: Schema; enum?: unknown[]; anyOf?: Schema[]; oneOf?: Schema[]; additionalProperties?: unknown; $ref?: string };

const edgeStrings = fc.constantFrom(
  '',
  ' ',
  'a\u0000b',
  '\u0000',
  '\ud800',
  '\udfff',
  '\u202e\u0041',
  'ｆｕｌｌ',
  '𝕏'.repeat(300),
  'é'.normalize('NFD'),
  '\ufeff',
  '../../etc/passwd',
  '%00',
  '%2e%2e%2f',
  '<script>alert(1)</script>',
  "' or 1=1 --",
  'null',
  'true',
  '[]',
  '{}',
  '\r\nX-Injected: 1',
  'x'.repeat(5_000),
  'http://[::7f00:1]/',
  'http://169.254.169.254/',
  'javascript:alert(1)',
);
const edgeNumbers = fc.constantFrom(0, -0, -1, 1, 0.5, 1e308, -1e308, 2 ** 31, 2 ** 53 + 2, 2 ** 64, -(2 ** 63), 1e-300);
/** Nesting deep enough to hurt a recursive reader. */
const deep = fc.integer({ min: 50, max: 300 }).map((depth) => {
  let value: unknown = 'bottom';
  for (let i = 0; i < depth; i++) value = i % 2 ? [value] : { nested: value };
  return value;
});
const junk: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: edgeStrings },
  { weight: 2, arbitrary: edgeNumbers },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 1, arbitrary: fc.constant(null) },
  { weight: 1, arbitrary: fc.boolean() },
  { weight: 1, arbitrary: deep },
);

/** A plausible value for `schema`, or (often) junk in its place. */
function valueFor(schema: Schema | undefined, depth = 0): fc.Arbitrary<unknown> {
  if (!schema || depth > 4) return junk;
  if (schema.enum) return fc.oneof(fc.constantFrom(...schema.enum), junk);
  const variants = schema.anyOf ?? schema.oneOf;
  if (variants) return fc.oneof(...variants.map((v) => valueFor(v, depth + 1)));
  const type = [schema.type].flat()[0];
  switch (type) {
    case 'object': {
      const members = Object.fromEntries(Object.entries(schema.properties ?? {}).map(([name, member]) => [name, valueFor(member, depth + 1)]));
      const shaped = fc.record(members, { requiredKeys: [] });
      return fc.oneof(
        { weight: 4, arbitrary: fc.tuple(shaped, fc.dictionary(fc.string({ maxLength: 12 }), junk, { maxKeys: 2 })).map(([known, extra]) => ({ ...extra, ...known })) },
        { weight: 1, arbitrary: junk },
      );
    }
    case 'array':
      return fc.oneof(fc.array(valueFor(schema.items, depth + 1), { maxLength: 4 }), junk);
    case 'string':
      return fc.oneof(fc.string({ maxLength: 40 }), fc.string({ unit: 'grapheme', maxLength: 20 }), junk);
    case 'integer':
    case 'number':
      return fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), junk);
    case 'boolean':
      return fc.oneof(fc.boolean(), junk);
    default:
      return junk;
  }
}

/**
 * A body the operation accepts, per operation: the fuzzer replaces one member of it at a time, so
 * that the handlers themselves (not only validation) meet the odd values.
 */
const VALID_BODIES: Record<string, Record<string, unknown>> = {
  'POST /v2/subscriptions': {
    event: 'registered-request',
    description: 'fuzzed',
    experiences: ['summer'],
    active: true,
    callback: { url: 'http://127.0.0.1:9/hook', customHeaders: { 'x-a': 'b' }, authorization: { Bearer: 'token-value' } },
  },
  'PUT /v2/subscriptions/{subscriptionId}': { description: 'changed', active: false, callback: { url: 'http://127.0.0.1:9/other' } },
  'POST /v2/subscriptions/{subscriptionId}/secret/rotate': { overlap: '1h' },
  'POST /v2/signing-secret/rotate': { overlap: '0m' },
  'POST /v2/requests': { experience: 'summer', event: 'purchase', data: { order: '1', total: 10 }, registeredCallbackUrl: 'http://127.0.0.1:9/r' },
  'POST /v2/request/{id}/events': { name: 'em-rota-de-entrega', refId: 'p-1', data: { trackingCode: 'T1', trackingLink: 'https://track.example/T1' } },
  'POST /v2/admin/accounts': { name: 'fuzzed-account' },
  'PATCH /v2/admin/accounts/{id}': { name: 'renamed', active: true },
  'POST /v2/admin/accounts/{id}/clients': { scopes: ['requests:read'] },
  'PATCH /v2/admin/accounts/{id}/clients/{clientId}': { active: true, scopes: ['requests:read'] },
  'POST /v2/admin/experiences': {
    name: 'fuzzed',
    title: 'Fuzzed',
    active: true,
    events: ['purchase'],
    prizes: [{ id: 'p1', bucket: 'b', title: 't', description: 'd', value: 5, quantity: 1, kind: 'coupon', stock: 10 }],
  },
  'PUT /v2/admin/experiences/{id}': { title: 'Fuzzed again', prizes: [{ id: 'p1', bucket: 'b', title: 't', value: 5, quantity: 1, kind: 'coupon', stock: null }] },
  'POST /v1/oauth/token': { client_id: 'cli_x', client_secret: 'secret' },
};

/** Every path to a member of `value` (objects and arrays), as key lists. */
function memberPaths(value: unknown, prefix: (string | number)[] = []): (string | number)[][] {
  if (value === null || typeof value !== 'object') return [];
  const entries: [string | number, unknown][] = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
  return entries.flatMap(([key, member]) => [[...prefix, key], ...memberPaths(member, [...prefix, key])]);
}

/** `base` with the member at `path` replaced by junk. */
function withMember(base: unknown, path: (string | number)[], replacement: unknown): unknown {
  const copy = structuredClone(base) as Record<string | number, unknown>;
  let target = copy;
  for (const key of path.slice(0, -1)) target = target[key] as Record<string | number, unknown>;
  target[path.at(-1)!] = replacement;
  return copy;
}

/** The request body as sent: JSON of a schema-shaped value, or malformed, empty, huge or of another type. */
function bodyFor(schema: Schema | undefined, valid?: Record<string, unknown>): fc.Arbitrary<{ text: string | undefined; contentType: string | undefined }> {
  const json = (contentType: string | undefined) => valueFor(schema).map((value) => ({ text: JSON.stringify(value) ?? 'null', contentType }));
  const paths = valid ? memberPaths(valid) : [];
  const oneMember = valid
    ? fc.tuple(fc.constantFrom(...paths), junk).map(([path, replacement]) => ({ text: JSON.stringify(withMember(valid, path, replacement)), contentType: 'application/json' }))
    : json('application/json');
  return fc.oneof(
    { weight: 8, arbitrary: oneMember },
    { weight: 1, arbitrary: fc.constant({ text: JSON.stringify(valid ?? {}), contentType: 'application/json' }) },
    { weight: 8, arbitrary: json('application/json') },
    { weight: 1, arbitrary: json('application/json; charset=utf-8') },
    { weight: 1, arbitrary: json(undefined) },
    { weight: 1, arbitrary: json('text/plain') },
    { weight: 1, arbitrary: json('application/x-www-form-urlencoded') },
    { weight: 2, arbitrary: fc.string({ maxLength: 60 }).map((text) => ({ text, contentType: 'application/json' })) },
    { weight: 1, arbitrary: valueFor(schema).map((value) => ({ text: (JSON.stringify(value) ?? '').slice(0, -1), contentType: 'application/json' })) },
    { weight: 1, arbitrary: fc.constantFrom({ text: '', contentType: 'application/json' }, { text: undefined, contentType: undefined }) },
    { weight: 1, arbitrary: fc.constant({ text: JSON.stringify({ huge: 'x'.repeat(1_100_000) }), contentType: 'application/json' }) },
    { weight: 1, arbitrary: fc.integer({ min: 1_000, max: 200_000 }).map((n) => ({ text: '['.repeat(n) + ']'.repeat(n), contentType: 'application/json' })) },
    { weight: 1, arbitrary: fc.constant({ text: '{"__proto__":{"admin":true},"constructor":{"prototype":{"x":1}}}', contentType: 'application/json' }) },
  );
}

/** encodeURIComponent, with lone surrogates (which it refuses) replaced first. */
const encodePathSegment = (text: string) => encodeURIComponent(text.replace(/\p{Surrogate}/gu, '\ufffd'));

interface Operation {
  method: string;
  path: string;
  pathParams: string[];
  queryParams: string[];
  body: Schema | undefined;
  formBody: boolean;
  secured: boolean;
}

/** The schema with each `$ref` to a component replaced by the component, at every depth (the named types refer to one another, never to themselves). */
function resolve(doc: { components?: { schemas?: Record<string, Schema> } }, schema: Schema | undefined): Schema | undefined {
  const inline = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(inline);
    if (node === null || typeof node !== 'object') return node;
    const ref = (node as Schema).$ref;
    if (ref) return inline(doc.components?.schemas?.[ref.split('/').pop()!]);
    return Object.fromEntries(Object.entries(node).map(([key, value]) => [key, inline(value)]));
  };
  return inline(schema) as Schema | undefined;
}

function operationsOf(doc: any): Operation[] {
  const operations: Operation[] = [];
  for (const [path, methods] of Object.entries<Record<string, any>>(doc.paths)) {
    if (!/^\/v2\//.test(path) && path !== '/v1/oauth/token') continue;
    for (const [method, op] of Object.entries<any>(methods)) {
      const parameters: Array<{ in: string; name: string }> = op.parameters ?? [];
      const content = op.requestBody?.content ?? {};
      operations.push({
        method: method.toUpperCase(),
        path,
        pathParams: parameters.filter((p) => p.in === 'path').map((p) => p.name),
        queryParams: parameters.filter((p) => p.in === 'query').map((p) => p.name),
        body: resolve(doc, content['application/json']?.schema ?? content['application/x-www-form-urlencoded']?.schema),
        formBody: 'application/x-www-form-urlencoded' in content,
        secured: (op.security ?? []).length > 0,
      });
    }
  }
  return operations;
}

for (const dialect of testDialects()) {
  describe(`fuzzing every route from the OpenAPI document [${dialect}]`, () => {
    let t: TestApp;
    let client: ClientCredentials;
    let tokens: { operator: string; client: string };
    let ids: Record<string, string[]>;
    let tables: string[];

    /** Every row of every table, hashed: what a rejected request must leave as it was. */
    async function digest(): Promise<string> {
      const hash = createHash('sha256');
      for (const table of tables) {
        const rows = await sql<Record<string, unknown>>`select * from ${sql.table(table)}`.execute(t.deps.db);
        hash.update(table).update(JSON.stringify(rows.rows.map((row) => JSON.stringify(row)).sort()));
      }
      return hash.digest('hex');
    }

    before(async () => {
      t = await startTestApp(dialect);
      client = await t.createClientAccount('fuzzed');
      tokens = { operator: await t.token(t.operator, 'admin'), client: await t.token(client) };
      await insertExperience(t.deps.db, client.accountId, { name: 'summer', prizes: [{ value: 5, stock: 3 }] });
      const subscription = await api(t.url, 'POST', '/v2/subscriptions', { token: tokens.client, body: { event: 'registered-request', callback: { url: 'http://127.0.0.1:9/hook' } } });
      const request = await api(t.url, 'POST', '/v2/requests', { token: tokens.client, body: { experience: 'summer' } });
      ids = { any: [client.accountId, subscription.body._id, request.body.id, client.clientId, t.operator.accountId] };
      tables =
        dialect === 'sqlite'
          ? (await sql<{ name: string }>`select name from sqlite_master where type = 'table' and name not like 'sqlite_%'`.execute(t.deps.db)).rows.map((r) => r.name)
          : (await sql<{ name: string }>`select table_name as name from information_schema.tables where table_schema = current_schema()`.execute(t.deps.db)).rows.map((r) => r.name);
    });
    after(() => t.close());

    const cases = { run: 0, rejected: 0, accepted: 0 };
    after(() => console.log(`fuzz [${dialect}]: ${cases.run} cases (${cases.accepted} accepted, ${cases.rejected} rejected), seed ${SEED}, ${RUNS} per operation`));

    it('no input gets a 5xx, a hang, an unexplained error or a changed database', async () => {
      const operations = operationsOf(t.app.swagger());
      assert.ok(operations.length >= 30, `${operations.length} operations`);
      for (const operation of operations) {
        const idValue = fc.oneof(
          { weight: 3, arbitrary: fc.constantFrom(...ids.any!) },
          { weight: 2, arbitrary: edgeStrings.map(encodePathSegment) },
          { weight: 1, arbitrary: fc.string({ maxLength: 300 }).map(encodePathSegment) },
          // Percent-encoded bytes that are not UTF-8, and encoded separators.
          { weight: 1, arbitrary: fc.constantFrom('%FF', '%C3%28', 'a%2Fb', '%2e%2e', '%', 'x%0Ay') },
        );
        const queryValue = fc.oneof(
          junk.map((v) => (typeof v === 'string' ? v : (JSON.stringify(v) ?? ''))),
          fc.constantFrom(...ids.any!),
        );
        const arbitrary = fc.record({
          params: fc.tuple(...operation.pathParams.map(() => idValue)),
          query: fc.tuple(...[...operation.queryParams, 'unknown'].map(() => fc.option(queryValue, { nil: undefined }))),
          body: operation.formBody
            ? fc.oneof(
                bodyFor(operation.body, VALID_BODIES[`${operation.method} ${operation.path}`]),
                fc
                  .dictionary(fc.constantFrom('grant_type', 'client_id', 'client_secret', 'scope', 'x'), fc.string({ maxLength: 30 }))
                  .map((form) => ({ text: new URLSearchParams(form).toString(), contentType: 'application/x-www-form-urlencoded' })),
              )
            : bodyFor(operation.body, VALID_BODIES[`${operation.method} ${operation.path}`]),
          auth: fc.constantFrom<keyof typeof tokens | 'none' | 'garbage'>('operator', 'client', 'client', 'none', 'garbage'),
          idempotencyKey: fc.option(
            fc.string({ maxLength: 300 }).filter((k) => /^[\x20-\x7e]*$/.test(k)),
            { nil: undefined },
          ),
        });
        await fc.assert(
          fc.asyncProperty(arbitrary, async (input) => {
            let path = operation.path;
            operation.pathParams.forEach((name, i) => (path = path.replace(`{${name}}`, input.params[i] as string)));
            const query = new URLSearchParams();
            [...operation.queryParams, 'unknown'].forEach((name, i) => input.query[i] !== undefined && query.set(name, input.query[i]));
            const url = `${t.url}${path}${query.size > 0 ? `?${query}` : ''}`;
            const headers: Record<string, string> = {};
            if (input.body.contentType) headers['content-type'] = input.body.contentType;
            if (input.auth === 'garbage') headers.authorization = 'Bearer garbage.token.value';
            else if (input.auth !== 'none' && operation.secured) headers.authorization = `Bearer ${tokens[input.auth]}`;
            if (input.idempotencyKey !== undefined) headers['idempotency-key'] = input.idempotencyKey;
            const sendsBody = operation.method !== 'GET' && operation.method !== 'DELETE' && input.body.text !== undefined;
            const before = await digest();
            const started = Date.now();
            const response = await fetch(url, { method: operation.method, headers, body: sendsBody ? input.body.text : undefined, signal: AbortSignal.timeout(TIMEOUT_MS) });
            const text = await response.text();
            cases.run += 1;
            const what = `${operation.method} ${url.slice(0, 200)} [${input.body.contentType}] ${String(input.body.text).slice(0, 200)} → ${response.status} ${text.slice(0, 300)}`;
            assert.ok(response.status < 500, what);
            assert.ok(Date.now() - started < TIMEOUT_MS, what);
            if (response.status < 400) {
              cases.accepted += 1;
              return;
            }
            cases.rejected += 1;
            const body = JSON.parse(text);
            if (operation.path.endsWith('/oauth/token')) {
              assert.equal(typeof body.error, 'string', what);
            } else {
              assert.match(String(response.headers.get('content-type')), /^application\/problem\+json/, what);
              assert.equal(body.status, response.status, what);
              assert.ok(typeof body.detail === 'string' && body.detail.length > 0, `no detail: ${what}`);
            }
            assert.equal(await digest(), before, `a rejected request changed the database: ${what}`);
          }),
          { numRuns: RUNS, seed: SEED, endOnFailure: true },
        );
      }
    });
  });
}
