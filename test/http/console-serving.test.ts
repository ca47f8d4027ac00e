// needs: database
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { buildApp } from '../../src/app.js';
import { ensureConsoleBuilt } from '../../src/console-build.js';
import type { TypedApp } from '../../src/http/typed-app.js';
import { testDialects } from '../support/databases.js';
import { startTestDatabase, type TestDatabase } from '../support/test-database.js';

const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";
const SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy': CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'permissions-policy': 'camera=(), microphone=(), geolocation=()',
};
const INDEX = '<!doctype html><html><head><script type="module" src="/console/assets/index-abc123.js"></script></head><body></body></html>';

interface Raw {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A GET with the path sent exactly as written (fetch would normalise `..` and `%2e%2e` away). */
function rawGet(base: string, path: string, headers: Record<string, string> = {}): Promise<Raw> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    request({ host: url.hostname, port: url.port, path, headers, agent: false }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve({ status: response.statusCode!, headers: response.headers, body }));
    })
      .on('error', reject)
      .end();
  });
}

function assertSecurityHeaders(response: Raw, what: string): void {
  for (const [name, value] of Object.entries(SECURITY_HEADERS)) assert.equal(response.headers[name], value, `${what}: ${name}`);
  assert.ok(!CSP.includes('unsafe-inline') && !CSP.includes('unsafe-eval'));
}

/** A built console as the frontend's Vite build lays it out, beside a file that must never be served. */
function builtConsole(): { root: string; dir: string } {
  const root = mkdtempSync(join(tmpdir(), 'rewards-console-'));
  const dir = join(root, 'dist');
  mkdirSync(join(dir, 'assets'), { recursive: true });
  writeFileSync(join(dir, 'index.html'), INDEX);
  writeFileSync(join(dir, 'assets', 'index-abc123.js'), 'console.log("console");');
  writeFileSync(join(dir, 'assets', 'index-abc123.css'), 'body{margin:0}');
  writeFileSync(join(dir, 'assets', 'logo-def456.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
  writeFileSync(join(dir, 'assets', 'font-0a1b2c.woff2'), Buffer.from([0x77, 0x4f, 0x46, 0x32]));
  writeFileSync(join(dir, '.hidden'), 'dotfile');
  writeFileSync(join(root, 'secret.txt'), 'TOP-SECRET-OUTSIDE-DIST');
  return { root, dir };
}

for (const dialect of testDialects()) {
  describe(`the console served at /console/ [${dialect}]`, () => {
    let database: TestDatabase;
    let app: TypedApp;
    let base: string;
    let files: { root: string; dir: string };

    before(async () => {
      database = await startTestDatabase(dialect);
      files = builtConsole();
      app = await buildApp(database.deps, { console: { dir: files.dir } });
      base = await app.listen({ port: 0, host: '127.0.0.1' });
    });
    after(async () => {
      await app.close();
      await database.close();
      rmSync(files.root, { recursive: true, force: true });
    });

    it('GET /console/ is index.html, revalidated on every load, with the security headers', async () => {
      const index = await rawGet(base, '/console/');
      assert.equal(index.status, 200);
      assert.equal(index.body, INDEX);
      assert.equal(index.headers['content-type'], 'text/html; charset=utf-8');
      assert.equal(index.headers['cache-control'], 'no-cache');
      assertSecurityHeaders(index, '/console/');
      const etag = String(index.headers.etag);
      const revalidated = await rawGet(base, '/console/', { 'if-none-match': etag });
      assert.equal(revalidated.status, 304);
      assert.equal(revalidated.body, '');
      assertSecurityHeaders(revalidated, '304');
    });

    it('GET /console redirects to /console/ (keeping the query), with the headers', async () => {
      const redirect = await rawGet(base, '/console');
      assert.equal(redirect.status, 301);
      assert.equal(redirect.headers.location, '/console/');
      assertSecurityHeaders(redirect, '/console');
      assert.equal((await rawGet(base, '/console?from=mail')).headers.location, '/console/?from=mail');
    });

    it('every other page path is index.html (client-side routing: each page has a shareable URL)', async () => {
      for (const path of ['/console/subscriptions', '/console/subscriptions/sub_01abc', '/console/notifications?status=failed', '/console/sign-in']) {
        const page = await rawGet(base, path);
        assert.equal(page.status, 200, path);
        assert.equal(page.body, INDEX, path);
        assert.equal(page.headers['cache-control'], 'no-cache', path);
        assertSecurityHeaders(page, path);
      }
    });

    it('assets are immutable for a year, with their content types; a missing asset is a 404, never the page', async () => {
      const expected: Record<string, string> = {
        'index-abc123.js': 'text/javascript; charset=utf-8',
        'index-abc123.css': 'text/css; charset=utf-8',
        'logo-def456.svg': 'image/svg+xml',
        'font-0a1b2c.woff2': 'font/woff2',
      };
      for (const [name, type] of Object.entries(expected)) {
        const asset = await rawGet(base, `/console/assets/${name}`);
        assert.equal(asset.status, 200, name);
        assert.equal(asset.headers['content-type'], type, name);
        assert.equal(asset.headers['cache-control'], 'public, max-age=31536000, immutable', name);
        assertSecurityHeaders(asset, name);
      }
      const missing = await rawGet(base, '/console/assets/index-gone.js');
      assert.equal(missing.status, 404);
      assert.match(String(missing.headers['content-type']), /^application\/problem\+json/);
      assertSecurityHeaders(missing, 'missing asset');
    });

    it('no path leaves the directory: encoded and plain dot segments, backslashes, dotfiles and NUL are 404 (or 400)', async () => {
      const attempts = [
        '/console/..%2fsecret.txt',
        '/console/..%2Fsecret.txt',
        '/console/%2e%2e/secret.txt',
        '/console/%2e%2e%2fsecret.txt',
        '/console/../secret.txt',
        '/console/assets/../../secret.txt',
        '/console/assets/..%2f..%2fsecret.txt',
        '/console/..%5csecret.txt',
        '/console/assets/..%5c..%5csecret.txt',
        '/console/.hidden',
        '/console/assets/%2e%2e',
        '/console/index.html%00.js',
        '/console/%ff',
      ];
      for (const path of attempts) {
        const response = await rawGet(base, path);
        assert.ok(response.status === 404 || response.status === 400, `${path}: ${response.status}`);
        assert.ok(!response.body.includes('TOP-SECRET') && !response.body.includes('dotfile'), path);
        assertSecurityHeaders(response, path);
      }
      // Decoded once, a double-encoded `../` is a file name like any other: not found, so the page.
      const doubleEncoded = await rawGet(base, '/console/%252e%252e%252fsecret.txt');
      assert.equal(doubleEncoded.body, INDEX);
    });

    it('API responses do not carry the console headers', async () => {
      const health = await rawGet(base, '/health/live');
      assert.equal(health.status, 200);
      assert.equal(health.headers['x-frame-options'], undefined);
    });
  });

  describe(`the console before it is built [${dialect}]`, () => {
    let database: TestDatabase;
    let root: string;
    before(async () => {
      database = await startTestDatabase(dialect);
      root = mkdtempSync(join(tmpdir(), 'rewards-console-'));
    });
    after(async () => {
      await database.close();
      rmSync(root, { recursive: true, force: true });
    });

    it('answers 503 problem naming the missing build, on every page path, with the headers', async () => {
      const dir = join(root, 'missing-dist');
      const app = await buildApp(database.deps, { console: { dir } });
      const base = await app.listen({ port: 0, host: '127.0.0.1' });
      try {
        for (const path of ['/console/', '/console/subscriptions']) {
          const response = await rawGet(base, path);
          assert.equal(response.status, 503, path);
          assert.match(String(response.headers['content-type']), /^application\/problem\+json/);
          assert.equal(response.headers['cache-control'], 'no-store');
          assert.match(JSON.parse(response.body).detail, /console is not built/);
          assertSecurityHeaders(response, path);
        }
        // Built while the service runs: served at once.
        mkdirSync(dir, { recursive: true });
        writeFileSync(join(dir, 'index.html'), INDEX);
        assert.equal((await rawGet(base, '/console/')).status, 200);
      } finally {
        await app.close();
      }
    });

    it('at start: a missing build script is a clear warning (info when the checkout has no console directory at all), and the 503 says so', () => {
      const { log, lines } = capturingLog();
      const build = ensureConsoleBuilt({ dir: join(root, 'none'), script: join(root, 'no-such-build.mjs'), log });
      assert.match(build.notBuiltDetail(), /build script is missing/);
      assert.ok(
        lines.some((line) => line.level === 40 && /console is not built/.test(String(line.msg))),
        JSON.stringify(lines),
      );
      const noConsole = capturingLog();
      ensureConsoleBuilt({ dir: join(root, 'no-console-dir', 'dist'), script: join(root, 'no-such-build.mjs'), log: noConsole.log });
      assert.deepEqual(
        noConsole.lines.map((line) => line.level),
        [30],
      );
    });

    it('at start: a missing index.html runs the build script with this Node.js in the background, then the console is served', async () => {
      const dir = join(root, 'built-at-start', 'dist');
      const script = join(root, 'built-at-start', 'scripts', 'build-console.mjs');
      mkdirSync(join(root, 'built-at-start', 'scripts'), { recursive: true });
      // The script builds only once the test has seen the 503 and says "go" (a file), so a slow
      // start of the app cannot let the build finish first.
      const go = join(root, 'built-at-start', 'go');
      writeFileSync(
        script,
        `import { existsSync, mkdirSync, writeFileSync } from 'node:fs';\nwhile (!existsSync(${JSON.stringify(go)})) await new Promise((r) => setTimeout(r, 20));\nmkdirSync(${JSON.stringify(dir)}, { recursive: true });\nwriteFileSync(${JSON.stringify(join(dir, 'index.html'))}, ${JSON.stringify(INDEX)});\n`,
      );
      const { log, lines } = capturingLog();
      const build = ensureConsoleBuilt({ dir, script, log });
      const app = await buildApp(database.deps, { console: { dir, notBuiltDetail: build.notBuiltDetail } });
      const base = await app.listen({ port: 0, host: '127.0.0.1' });
      try {
        const during = await rawGet(base, '/console/');
        assert.equal(during.status, 503);
        assert.match(JSON.parse(during.body).detail, /being built/);
        writeFileSync(go, '');
        for (let i = 0; i < 100 && !lines.some((line) => line.msg === 'console built'); i++) await new Promise((r) => setTimeout(r, 100));
        assert.ok(
          lines.some((line) => line.msg === 'console built'),
          JSON.stringify(lines),
        );
        const served = await rawGet(base, '/console/');
        assert.equal(served.status, 200);
        assert.equal(served.body, INDEX);
        // Present now: a second start builds nothing.
        const again = capturingLog();
        ensureConsoleBuilt({ dir, script, log: again.log });
        assert.deepEqual(again.lines, []);
      } finally {
        build.stop();
        await app.close();
      }
    });

    it('at start: a failing build is logged as an error and the 503 says the build failed', async () => {
      const dir = join(root, 'failing', 'dist');
      const script = join(root, 'failing', 'scripts', 'build-console.mjs');
      mkdirSync(join(root, 'failing', 'scripts'), { recursive: true });
      writeFileSync(script, `console.error('vite: something broke'); process.exit(3);\n`);
      const { log, lines } = capturingLog();
      const build = ensureConsoleBuilt({ dir, script, log });
      for (let i = 0; i < 100 && !lines.some((line) => line.level === 50); i++) await new Promise((r) => setTimeout(r, 100));
      const failure = lines.find((line) => line.level === 50);
      assert.ok(failure, JSON.stringify(lines));
      assert.equal(failure.exitCode, 3);
      assert.match(String(failure.output), /something broke/);
      assert.match(build.notBuiltDetail(), /build failed/);
    });
  });
}

function capturingLog() {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { log: pino({ level: 'info' }, sink), lines };
}
