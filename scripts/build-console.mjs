#!/usr/bin/env node
// Builds the web console into console/dist/ (docs/console.md, "Pages"):
//   1. regenerates console/src/api/schema.d.ts from the service's OpenAPI document (made
//      in-process, no server), so every build uses the current API;
//   2. typechecks the console (tsc -p console): a type error, or an API change the console does
//      not follow, fails the build;
//   3. vite build (base /console/, no inline script or style).
// Quiet on success (one line). `npm run build:console` runs it; so do `prepare` (npm ci) and the
// API at start when console/dist/index.html is missing.
// --if-possible: exit 0 with a note when the build tools are not installed (npm ci --omit=dev).
// The console is an npm workspace (console/package.json declares Preact, openapi-fetch and Vite);
// Vite is resolved from there, TypeScript and openapi-typescript from the service's package.json.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const consoleDir = join(root, 'console');
const started = Date.now();
const require = createRequire(import.meta.url);

function resolvable([name, from]) {
  try {
    require.resolve(name, { paths: [from] });
    return true;
  } catch {
    return false;
  }
}

const tools = [
  ['vite', consoleDir],
  ['typescript', root],
  ['openapi-typescript', root],
];
if (process.argv.includes('--if-possible') && !tools.every(resolvable)) {
  console.log('console build skipped: its build tools (devDependencies) are not installed; the API builds it at start if they are');
  process.exit(0);
}

function run(label, args) {
  const result = spawnSync(process.execPath, args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  if (result.status !== 0) {
    process.stderr.write(`console build failed at: ${label}\n${result.stdout ?? ''}${result.stderr ?? ''}`);
    process.exit(result.status ?? 1);
  }
}

// 1 and 2 in parallel would race on schema.d.ts; they run in order.
run('generate the API schema (scripts/console-api-schema.ts)', ['--import', 'tsx', join(root, 'scripts/console-api-schema.ts')]);
run('typecheck (tsc -p console)', [require.resolve('typescript/bin/tsc', { paths: [root] }), '-p', consoleDir]);

const { build } = await import(pathToFileURL(require.resolve('vite', { paths: [consoleDir] })).href);
try {
  await build({ configFile: join(consoleDir, 'vite.config.ts'), logLevel: 'error' });
} catch (error) {
  process.stderr.write(`console build failed at: vite build\n${error?.stack ?? error}\n`);
  process.exit(1);
}

const html = readFileSync(join(consoleDir, 'dist/index.html'), 'utf8');
// The served CSP has no 'unsafe-inline': an inline script or style would not run.
if (/<script(?![^>]*\bsrc=)[^>]*>/i.test(html) || /<style[\s>]/i.test(html) || /\sstyle=/i.test(html)) {
  process.stderr.write('console build failed: console/dist/index.html has an inline script or style (the CSP forbids them)\n');
  process.exit(1);
}
if (!existsSync(join(consoleDir, 'dist/index.html'))) process.exit(1);
console.log(`console built in ${((Date.now() - started) / 1000).toFixed(1)} s → console/dist/`);
