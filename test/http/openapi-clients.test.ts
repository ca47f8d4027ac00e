// needs: nothing
// Clients generated from the OpenAPI document get the API's own type names (README.md, "The
// OpenAPI document"): every object type of a request body, a response or a webhook payload is a
// named component referred to with `$ref`, and three common generators — openapi-typescript,
// @hey-api/openapi-ts and orval, pinned in package.json — turn the document into TypeScript that
// compiles under `strict`, exports each component by its name (the webhook payloads included), and
// has no name made up from an operation (`…WebhookWebhookRequest`) or a numbered copy
// (`Subscription2`). Each generator runs as its own process over the document written to a
// temporary directory, with no network.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { openApiDocument } from '../../scripts/console-api-schema.js';

const bin = (path: string) => fileURLToPath(new URL(`../../node_modules/${path}`, import.meta.url));
const run = promisify(execFile);
const ENV = { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0', CI: 'true' };

interface Media {
  schema?: Schema;
}
interface Schema {
  $ref?: string;
  type?: string | string[];
  properties?: object;
  items?: Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
}
interface Operation {
  operationId?: string;
  requestBody?: { content: Record<string, Media> };
  responses: Record<string, { content?: Record<string, Media> }>;
}
interface Doc {
  paths: Record<string, Record<string, Operation>>;
  webhooks: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, object> };
}

/** Where an object type is spelled out inline (not a `$ref`), looking through lists and unions. */
function inlineObjects(schema: Schema | undefined, at: string): string[] {
  if (!schema || schema.$ref) return [];
  if (schema.properties || [schema.type].flat().includes('object')) return [at];
  return [
    ...inlineObjects(schema.items, `${at}[]`),
    ...(['anyOf', 'oneOf', 'allOf'] as const).flatMap((key) => (schema[key] ?? []).flatMap((member, i) => inlineObjects(member, `${at}.${key}[${i}]`))),
  ];
}

/** The names a generated TypeScript file exports. */
const exported = (source: string) => new Set([...source.matchAll(/^export (?:declare )?(?:type|interface|const|enum) ([A-Za-z_$][\w$]*)/gm)].map((m) => m[1]!));

let built: Promise<Doc> | undefined;
const theDocument = () => (built ??= openApiDocument() as unknown as Promise<Doc>);

test('every request body, response and webhook payload that is an object is a named component', async () => {
  const document = await theDocument();
  const inline: string[] = [];
  for (const root of ['paths', 'webhooks'] as const) {
    for (const [path, item] of Object.entries(document[root])) {
      for (const [method, operation] of Object.entries(item)) {
        const name = `${method.toUpperCase()} ${path} (${operation.operationId})`;
        for (const [type, media] of Object.entries(operation.requestBody?.content ?? {})) inline.push(...inlineObjects(media.schema, `${name} request ${type}`));
        for (const [status, response] of Object.entries(operation.responses)) {
          for (const [type, media] of Object.entries(response.content ?? {})) inline.push(...inlineObjects(media.schema, `${name} ${status} ${type}`));
        }
      }
    }
  }
  assert.deepEqual(inline, [], 'give each of these schemas a `title` (its type name): see src/http/openapi.ts');
  const names = Object.keys(document.components.schemas);
  for (const name of [
    'Problem',
    'Subscription',
    'SubscriptionInput',
    'CreatedSubscription',
    'RewardRequest',
    'RewardRequestCreate',
    'RequestEvent',
    'Notification',
    'NotificationAttempt',
    'NotificationDetail',
    'Account',
    'Client',
    'Experience',
    'Prize',
    'TokenResponse',
    'TokenError',
    'RegisteredRequestsPayload',
    'ProcessedRequestsPayload',
    'DeliveredItem',
    'CanceledItem',
  ]) {
    assert.ok(names.includes(name), `components.schemas has ${name}`);
  }
  // Responses are listed status by status: a range key (`4XX`) leaves orval's output uncompilable.
  const ranges = Object.entries(document.paths).flatMap(([path, item]) =>
    Object.entries(item).flatMap(([method, operation]) =>
      Object.keys(operation.responses)
        .filter((status) => /X/i.test(status))
        .map((status) => `${method.toUpperCase()} ${path} ${status}`),
    ),
  );
  assert.deepEqual(ranges, []);
});

test('openapi-typescript, @hey-api/openapi-ts and orval generate clients that compile and name the API’s types', async () => {
  const document = await theDocument();
  const components = Object.keys(document.components.schemas);
  const dir = mkdtempSync(join(tmpdir(), 'rewards-openapi-clients-'));
  try {
    const spec = join(dir, 'openapi.json');
    writeFileSync(spec, JSON.stringify(document));
    const generate = (args: string[]) => run(process.execPath, args, { cwd: dir, env: ENV, timeout: 300_000 });

    // The commands the README gives an integrator, as they are there.
    await generate([bin('openapi-typescript/bin/cli.js'), spec, '--root-types', '--root-types-no-schema-prefix', '-o', join(dir, 'openapi-typescript/schema.d.ts')]);
    await generate([bin('@hey-api/openapi-ts/bin/index.cjs'), '-i', spec, '-o', join(dir, 'hey-api')]);
    mkdirSync(join(dir, 'orval'));
    await generate([bin('orval/dist/bin/orval.js'), '-i', spec, '-o', join(dir, 'orval/api.ts'), '--client', 'fetch', '--mode', 'split']);

    const outputs = {
      'openapi-typescript': readFileSync(join(dir, 'openapi-typescript/schema.d.ts'), 'utf8'),
      '@hey-api/openapi-ts': readFileSync(join(dir, 'hey-api/types.gen.ts'), 'utf8'),
      // orval writes the models apart from the functions in split mode: webhooks have no function, only their payload models.
      orval: readFileSync(join(dir, 'orval/api.schemas.ts'), 'utf8'),
    };
    for (const [generator, source] of Object.entries(outputs)) {
      const names = exported(source);
      const missing = components.filter((name) => !names.has(name));
      assert.deepEqual(missing, [], `${generator} exports every component by its name`);
      const madeUp = [...names].filter((name) => /WebhookWebhook/.test(name) || components.some((component) => new RegExp(`^${component}\\d+$`).test(name)));
      assert.deepEqual(madeUp, [], `${generator}: no name made up from an operation, no numbered copy`);
    }
    // An operation whose body or answer is a component gets no copy of it named after the operation (orval's `CreateSubscriptionBody`, `GetSubscription200`).
    const copies = Object.values(document.paths).flatMap((item) =>
      Object.values(item).flatMap((operation) => {
        const prefix = operation.operationId!.charAt(0).toUpperCase() + operation.operationId!.slice(1);
        const referenced = (media?: Record<string, Media>) => Object.values(media ?? {}).some((m) => m.schema?.$ref);
        return [
          ...(referenced(operation.requestBody?.content) ? [`${prefix}Body`] : []),
          ...Object.entries(operation.responses).flatMap(([status, response]) => (referenced(response.content) ? [`${prefix}${status}`] : [])),
        ];
      }),
    );
    assert.deepEqual(
      copies.filter((name) => exported(outputs.orval).has(name)),
      [],
    );

    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, skipLibCheck: false, lib: ['ES2022', 'DOM', 'DOM.Iterable'], types: [] },
        include: ['openapi-typescript', 'hey-api', 'orval'],
      }),
    );
    const compiled = await run(process.execPath, [bin('typescript/bin/tsc'), '-p', join(dir, 'tsconfig.json')], { cwd: dir, env: ENV, timeout: 300_000 }).then(
      () => '',
      (error: { stdout?: string; stderr?: string }) => `${error.stdout ?? ''}${error.stderr ?? ''}`,
    );
    assert.equal(compiled, '', 'the generated clients compile under strict');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
