// needs: nothing
// Every operation of the OpenAPI document shows an example of its request body and of each JSON
// answer, and every example is valid against the schema beside it (README.md, "The OpenAPI
// document"): an integrator copying an example gets something the service accepts, and a schema
// change that an example no longer fits fails here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { openApiDocument } from '../../scripts/console-api-schema.js';
import { idTime } from '../../src/domain/ids.js';

const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule) as unknown as (ajv: unknown) => void;

interface Media {
  schema?: object;
  example?: unknown;
  examples?: Record<string, { value: unknown }>;
}
interface Operation {
  operationId: string;
  requestBody?: { content: Record<string, Media> };
  responses: Record<string, { content?: Record<string, Media> }>;
}
interface Doc {
  paths: Record<string, Record<string, Operation>>;
  webhooks: Record<string, Record<string, Operation>>;
}

const examplesOf = (media: Media): unknown[] => [...(media.example === undefined ? [] : [media.example]), ...Object.values(media.examples ?? {}).map((e) => e.value)];

test('every request body and every JSON answer of every operation has an example that its schema accepts', async () => {
  const document = (await openApiDocument()) as unknown as Doc;
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
  addFormats(ajv);
  ajv.addSchema(document, 'openapi.json');
  const pointer = (...parts: string[]) => parts.map((p) => p.replaceAll('~', '~0').replaceAll('/', '~1')).join('/');
  const problems: string[] = [];
  let checked = 0;
  const check = (where: string[], label: string, media: Media) => {
    const examples = examplesOf(media);
    if (examples.length === 0) return problems.push(`${label}: no example`);
    if (!media.schema) return;
    const validate = ajv.compile({ $ref: `openapi.json#/${pointer(...where, 'schema')}` });
    for (const example of examples) {
      checked++;
      if (!validate(example)) problems.push(`${label}: example refused by its schema: ${ajv.errorsText(validate.errors)}\n  ${JSON.stringify(example).slice(0, 300)}`);
    }
  };
  for (const root of ['paths', 'webhooks'] as const) {
    for (const [path, item] of Object.entries(document[root])) {
      for (const [method, operation] of Object.entries(item)) {
        const name = `${method.toUpperCase()} ${path} (${operation.operationId})`;
        for (const [type, media] of Object.entries(operation.requestBody?.content ?? {})) check([root, path, method, 'requestBody', 'content', type], `${name} request ${type}`, media);
        for (const [status, response] of Object.entries(operation.responses)) {
          for (const [type, media] of Object.entries(response.content ?? {})) {
            if (!type.includes('json')) continue; // the Prometheus text of /metrics
            check([root, path, method, 'responses', status, 'content', type], `${name} ${status} ${type}`, media);
          }
        }
      }
    }
  }
  assert.deepEqual(problems, [], `${problems.length} operation part(s) without a valid example:\n${problems.join('\n')}`);
  assert.ok(checked > 300, `only ${checked} examples checked`);
});

test('every id in an example has the shape of the ids the service makes', async () => {
  // `prefix_` + 26 lower-case Crockford base32 characters: 10 of milliseconds, 16 random (src/domain/ids.ts).
  const document = await openApiDocument();
  const ids = new Set<string>();
  const collect = (node: unknown, inExample: boolean): void => {
    if (Array.isArray(node)) return node.forEach((item) => collect(item, inExample));
    if (node !== null && typeof node === 'object') return Object.entries(node).forEach(([key, value]) => collect(value, inExample || key === 'example' || key === 'examples'));
    if (inExample && typeof node === 'string') for (const [id] of node.matchAll(/\b(?:acc|cli|cln|exp|msg|req|sub)_\w*/g)) ids.add(id);
  };
  collect(document, false);
  assert.ok(ids.size >= 8, `only ${ids.size} ids found in the examples`);
  const malformed = [...ids].filter((id) => !/^[a-z]{3}_[0-9a-hjkmnp-tv-z]{26}$/.test(id) || idTime(id) === undefined);
  assert.deepEqual(malformed, []);
});
