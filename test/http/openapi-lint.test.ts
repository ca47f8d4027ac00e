// needs: nothing
// The served OpenAPI document passes Redocly's recommended rules with no error and no warning
// (README.md, "The OpenAPI document"). The linter is @redocly/cli, pinned exactly in
// package.json; it runs as its own process over the document written to a temporary directory,
// with telemetry and the update check off (it must not need the network).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { openApiDocument } from '../../scripts/console-api-schema.js';
import { makeChecker, type Document } from '../support/openapi-responses.js';

const CLI = fileURLToPath(new URL('../../node_modules/@redocly/cli/bin/cli.js', import.meta.url));

interface LintProblem {
  ruleId: string;
  severity: string;
  message: string;
  location: { pointer?: string }[];
}

test('the OpenAPI document has no error and no warning under Redocly’s recommended rules', async () => {
  const document = await openApiDocument();
  const dir = mkdtempSync(join(tmpdir(), 'rewards-openapi-lint-'));
  try {
    const file = join(dir, 'openapi.json');
    writeFileSync(file, JSON.stringify(document));
    const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' };
    // lint exits 1 when it finds an error: its JSON report is on stdout either way.
    const { stdout } = await promisify(execFile)(process.execPath, [CLI, 'lint', '--extends=recommended', '--format=json', '--max-problems=1000', file], { cwd: dir, env, timeout: 60_000 }).catch(
      (error: { stdout?: string; stderr?: string }) => {
        if (!error.stdout) throw error;
        return { stdout: error.stdout };
      },
    );
    const report = JSON.parse(stdout) as { problems: LintProblem[] };
    const lines = report.problems.map((p) => `${p.severity} ${p.ruleId} ${p.location[0]?.pointer ?? ''}: ${p.message}`);
    assert.deepEqual(lines, [], `redocly lint found ${lines.length} problem(s):\n${lines.join('\n')}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('every operation has a unique operationId; the /v1 copies end in V1', async () => {
  const document = (await openApiDocument()) as { paths: Record<string, Record<string, { operationId?: string }>> };
  const ids: string[] = [];
  for (const [path, item] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(item)) {
      assert.ok(operation.operationId, `${method.toUpperCase()} ${path} has no operationId`);
      assert.equal(operation.operationId.endsWith('V1'), path.startsWith('/v1/'), `${method.toUpperCase()} ${path}: ${operation.operationId}`);
      ids.push(operation.operationId);
    }
  }
  assert.equal(new Set(ids).size, ids.length, 'operationIds are unique');
  assert.equal(document.paths['/v2/subscriptions']!.post!.operationId, 'createSubscription');
  assert.equal(document.paths['/v1/subscriptions']!.post!.operationId, 'createSubscriptionV1');
});

test('the drift check of api() refuses an undocumented status, content type or body', async () => {
  const check = makeChecker((await openApiDocument()) as unknown as Document);
  const base = 'http://127.0.0.1:1';
  const problem = JSON.stringify({ type: 'https://rewards.dev/problems/not-found', title: 'Not Found', status: 404, detail: 'subscription not found' });
  const json = 'application/json; charset=utf-8';
  assert.equal(check.check('GET', `${base}/v2/subscriptions/sub_1`, 404, 'application/problem+json', problem, JSON.parse(problem)), undefined);
  assert.match(check.check('GET', `${base}/v2/subscriptions/sub_1`, 418, json, '{}', {}) ?? '', /answered 418, which the OpenAPI document does not list/);
  assert.match(check.check('GET', `${base}/v2/subscriptions/sub_1`, 200, 'text/html', '<p>', '<p>') ?? '', /as text\/html/);
  assert.match(check.check('GET', `${base}/v1/me`, 200, json, '{"nope":1}', { nope: 1 }) ?? '', /getMeV1\) answered 200 with a body the document's schema refuses/);
  assert.equal(check.check('GET', `${base}/not-a-route`, 404, 'application/problem+json', problem, JSON.parse(problem)), undefined);
});

test('every operation and webhook has a summary and a description', async () => {
  const document = (await openApiDocument()) as {
    paths: Record<string, Record<string, { summary?: string; description?: string }>>;
    webhooks: Record<string, Record<string, { summary?: string; description?: string }>>;
  };
  const missing = [...Object.entries(document.paths), ...Object.entries(document.webhooks)].flatMap(([path, item]) =>
    Object.entries(item).flatMap(([method, operation]) => (operation.summary && operation.description ? [] : [`${method.toUpperCase()} ${path}`])),
  );
  assert.deepEqual(missing, []);
});
