// needs: nothing
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';

type Needs = Map<string, Set<string>>;
// A plain-JavaScript script of the test runner, loaded by URL: TypeScript has no declarations for it.
const plan = (await import(new URL('../../scripts/test-plan.mjs', import.meta.url).href)) as {
  readNeeds: (root: string, files: string[]) => Needs;
  selectFiles: (needs: Needs, options: { dialects: string[]; everyLineOnly: boolean }) => string[];
  deal: (files: string[], count: number, cost: (file: string) => number) => { files: string[]; ms: number }[];
  estimate: (durations: Record<string, Record<string, number>>, file: string, dialects: string[]) => number;
};

// Pieces of the fixtures' source, split so that this file does not itself say what they say.
const LOOP = ['for (const dialect of testDialects', '()) {}'].join('');
const BROWSER = ["import { launch } from '../support/", "browser.js';"].join('');

describe('the test plan: what a run runs, and where (scripts/test-plan.mjs)', () => {
  let root: string;
  const write = (file: string, source: string) => writeFileSync(join(root, file), source);
  before(() => {
    root = mkdtempSync(join(tmpdir(), 'rewards-test-plan-'));
    mkdirSync(join(root, 'test'));
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  it('a file that does not say what it needs, or says it wrongly, stops the run, each named', () => {
    write('test/silent.test.ts', "import { it } from 'node:test';\n");
    write('test/hidden-database.test.ts', `// needs: nothing\n${LOOP}\n`);
    write('test/no-database.test.ts', '// needs: database\n');
    write('test/hidden-browser.test.ts', `// needs: nothing\n${BROWSER}\n`);
    write('test/typo.test.ts', '// needs: databse\n');
    const files = ['silent', 'hidden-database', 'no-database', 'hidden-browser', 'typo'].map((name) => `test/${name}.test.ts`);
    assert.throws(
      () => plan.readNeeds(root, files),
      (error: Error) => {
        assert.match(error.message, /test\/silent\.test\.ts: no "\/\/ needs: …" first line/);
        assert.match(error.message, /test\/hidden-database\.test\.ts: loops over testDialects\(\) but does not say "database"/);
        assert.match(error.message, /test\/no-database\.test\.ts: says "database" but never loops over testDialects\(\)/);
        assert.match(error.message, /test\/hidden-browser\.test\.ts: imports test\/support\/browser\.ts but does not say "chromium"/);
        assert.match(error.message, /test\/typo\.test\.ts: unknown need databse/);
        return true;
      },
    );
  });

  it('a file without a database runs once; a driver test only with its database; off the primary line only every-node-line files', () => {
    write('test/unit.test.ts', '// needs: nothing\n');
    write('test/api.test.ts', `// needs: database\n${LOOP}\n`);
    write('test/driver.test.ts', '// needs: sqlite, every-node-line\n');
    write('test/bouncer.test.ts', '// needs: postgres\n');
    const needs = plan.readNeeds(root, ['test/unit.test.ts', 'test/api.test.ts', 'test/driver.test.ts', 'test/bouncer.test.ts']);
    assert.deepEqual(plan.selectFiles(needs, { dialects: ['sqlite', 'postgres'], everyLineOnly: false }), ['test/unit.test.ts', 'test/api.test.ts', 'test/driver.test.ts', 'test/bouncer.test.ts']);
    assert.deepEqual(plan.selectFiles(needs, { dialects: ['sqlite'], everyLineOnly: false }), ['test/unit.test.ts', 'test/api.test.ts', 'test/driver.test.ts']);
    assert.deepEqual(plan.selectFiles(needs, { dialects: ['postgres'], everyLineOnly: false }), ['test/unit.test.ts', 'test/api.test.ts', 'test/bouncer.test.ts']);
    assert.deepEqual(plan.selectFiles(needs, { dialects: [], everyLineOnly: false }), ['test/unit.test.ts']);
    assert.deepEqual(plan.selectFiles(needs, { dialects: ['sqlite', 'postgres'], everyLineOnly: true }), ['test/driver.test.ts']);
  });

  it('a file is expected to take what it took for the databases tested; one never measured, five seconds', () => {
    const durations = { 'test/api.test.ts': { any: 100, sqlite: 1_000, postgres: 3_000 } };
    assert.equal(plan.estimate(durations, 'test/api.test.ts', ['sqlite']), 1_100);
    assert.equal(plan.estimate(durations, 'test/api.test.ts', ['sqlite', 'postgres']), 4_100);
    assert.equal(plan.estimate(durations, 'test/new.test.ts', ['sqlite']), 5_000);
  });

  it('files go to the processes longest first, each to the least loaded one', () => {
    const costs: Record<string, number> = { a: 50, b: 40, c: 30, d: 20, e: 10, f: 10, g: 10 };
    const shares = plan.deal(Object.keys(costs), 3, (file) => costs[file]!);
    assert.deepEqual(
      shares.map((share) => share.files),
      [
        ['a', 'f'],
        ['b', 'e', 'g'],
        ['c', 'd'],
      ],
    );
    assert.deepEqual(
      shares.map((share) => share.ms),
      [60, 60, 50],
    );
    // Dealt round-robin in alphabetical order, the same files would have been 80, 50, 40.
  });
});
