// needs: nothing
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

  // Each rule is shown failing on a deliberate violation, so a rule that matches nothing (a typo in
  // a path, a dependency type the cruiser does not report) cannot pass unnoticed.
  const violations = [
    {
      rule: 'domain-is-pure',
      file: 'src/domain/wrong-way.ts',
      source: "import { findAccountById } from '../storage/repositories/accounts.js';\nexport const lookUp = findAccountById;\n",
      target: 'src/storage/repositories/accounts.ts',
    },
    {
      rule: 'domain-is-pure',
      file: 'src/domain/wrong-way-type.ts',
      source: "import type { Db } from '../storage/database.js';\nexport type Handle = Db;\n",
      target: 'src/storage/database.ts',
    },
    {
      rule: 'routes-call-services',
      file: 'src/http/routes/wrong-way.ts',
      source: "import { findAccountById } from '../../storage/repositories/accounts.js';\nexport const lookUp = findAccountById;\n",
      target: 'src/storage/repositories/accounts.ts',
    },
    {
      rule: 'root-is-on-top',
      file: 'src/worker/wrong-way.ts',
      source: "import type { Deps } from '../deps.js';\nexport type Everything = Deps;\n",
      target: 'src/deps.ts',
    },
  ];

  // One copy of src/ with every violation in it, cruised once: each rule must report its own.
  it('fails on a deliberate violation of each rule', () => {
    const copy = mkdtempSync(join(tmpdir(), 'rewards-layers-'));
    try {
      cpSync(join(root, 'src'), join(copy, 'src'), { recursive: true });
      cpSync(join(root, 'tsconfig.json'), join(copy, 'tsconfig.json'));
      mkdirSync(join(copy, 'node_modules'));
      for (const violation of violations) writeFileSync(join(copy, violation.file), violation.source);
      const { status, output } = cruise(copy);
      assert.notEqual(status, 0);
      for (const violation of violations) assert.ok(output.includes(`${violation.rule}: ${violation.file} → ${violation.target}`), `${violation.rule} did not report ${violation.file}\n${output}`);
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  });
});
