// needs: nothing
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, it } from 'node:test';
import { CONSOLE_BUILD_SCRIPT, CONSOLE_DIST_DIR } from '../../src/console-build.js';

/** docs/console.md, "Size of the first load": what a browser fetches to show the first page. */
const BUDGET_BYTES = 30_000;

describe('console first load', () => {
  it('index.html and every file it references stay under 30 kB gzipped; the operator pages and the subscription pages are chunks of their own', () => {
    if (!existsSync(join(CONSOLE_DIST_DIR, 'index.html'))) {
      const build = spawnSync(process.execPath, [CONSOLE_BUILD_SCRIPT], { encoding: 'utf8' });
      assert.equal(build.status, 0, `npm run build:console failed: ${build.stdout}${build.stderr}`);
    }
    const html = readFileSync(join(CONSOLE_DIST_DIR, 'index.html'));
    const referenced = [...html.toString().matchAll(/(?:src|href)="\/console\/([^"]+)"/g)].map((m) => m[1]!);
    assert.ok(referenced.some((file) => file.endsWith('.js')) && referenced.some((file) => file.endsWith('.css')), referenced.join(', '));
    const sizes = [['index.html', gzipSync(html).length] as const, ...referenced.map((file) => [file, gzipSync(readFileSync(join(CONSOLE_DIST_DIR, file))).length] as const)];
    const total = sizes.reduce((sum, [, size]) => sum + size, 0);
    assert.ok(total < BUDGET_BYTES, `first load ${total} B gzipped: ${sizes.map(([file, size]) => `${file} ${size}`).join(', ')}`);
    assert.ok(!referenced.some((file) => file.includes('operator')), 'the operator chunk is not part of the first load');
    assert.ok(!referenced.some((file) => file.includes('subscription-pages')), 'nor the subscription pages');
  });
});
