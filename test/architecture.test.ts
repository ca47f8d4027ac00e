import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';

// The direction of imports (.dependency-cruiser.cjs says which layer may import which) is part of
// `npm test`: a wrong-way import fails the suite, not only a review.
const root = new URL('..', import.meta.url).pathname;
const depcruise = join(root, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruise.mjs');

function cruise(cwd: string) {
  const run = spawnSync(process.execPath, [depcruise, 'src', '--config', join(root, '.dependency-cruiser.cjs'), '--output-type', 'err'], { cwd, encoding: 'utf8' });
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

describe('layers point one way', () => {
  it('src/ has no wrong-way import and no cycle', () => {
    const { status, output } = cruise(root);
    assert.equal(status, 0, output);
  });

  it('fails on a wrong-way import: domain/ reaching into storage/', () => {
    const copy = mkdtempSync(join(tmpdir(), 'rewards-layers-'));
    try {
      cpSync(join(root, 'src'), join(copy, 'src'), { recursive: true });
      cpSync(join(root, 'tsconfig.json'), join(copy, 'tsconfig.json'));
      mkdirSync(join(copy, 'node_modules'));
      writeFileSync(
        join(copy, 'src', 'domain', 'wrong-way.ts'),
        "import { findAccountById } from '../storage/repositories/accounts.js';\nexport const lookUp = findAccountById;\n",
      );
      const { status, output } = cruise(copy);
      assert.notEqual(status, 0);
      assert.match(output, /domain-is-pure: src\/domain\/wrong-way\.ts → src\/storage\/repositories\/accounts\.ts/);
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  });
});
