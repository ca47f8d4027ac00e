// needs: nothing
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ESLint } from 'eslint';

// eslint.config.js accepts an exception to a rule only for one line, naming the rule, with a
// reason; `npm run lint` in CI relies on it to keep blanket disables out of the tree.
const root = new URL('..', import.meta.url).pathname;
// A plain JavaScript path: linted without type information, so the probe needs no tsconfig entry.
const filePath = `${root}scripts/lint-probe.mjs`;

async function lint(text: string) {
  const [result] = await new ESLint({ cwd: root }).lintText(text, { filePath });
  return result!.messages.map((message) => message.ruleId);
}

describe('lint exceptions are one line, named, with a reason', () => {
  it('accepts a one-line disable that names its rule and says why', async () => {
    assert.deepEqual(await lint('// eslint-disable-next-line @typescript-eslint/no-unused-vars -- kept for its position\nconst unused = 1;\n'), []);
  });

  it('refuses a disable without a reason, and one covering a block', async () => {
    assert.ok((await lint('// eslint-disable-next-line @typescript-eslint/no-unused-vars\nconst unused = 1;\n')).includes('local/scoped-disables'));
    assert.ok((await lint('/* eslint-disable @typescript-eslint/no-unused-vars -- a whole block */\nconst unused = 1;\n')).includes('local/scoped-disables'));
  });

  it('stops the run on a disable of every rule, which would silence its own report', async () => {
    await assert.rejects(lint('/* eslint-disable */\nconst unused = 1;\n'), /a disable of every rule/);
  });
});
