// needs: nothing
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';

/**
 * The docs name only what the code has: every inline code span of README.md and docs/*.md that
 * names a file, an environment variable, a command, a route or an identifier is checked against
 * the repository by scripts/docs-names.mjs (its header says how each kind is recognised and what is
 * not checked). A rename in the code that leaves a page behind fails here, with the page's line.
 */

interface StaleName {
  file: string;
  line: number;
  name: string;
  kind: string;
  reason: string;
}

const ROOT = new URL('../..', import.meta.url).pathname;
// A plain-JavaScript script, loaded by URL: TypeScript has no declarations for it.
const checker = new URL('../../scripts/docs-names.mjs', import.meta.url).href;
const { staleNames } = (await import(checker)) as { staleNames: (root: string, files?: string[]) => StaleName[] };

describe('names in the docs', () => {
  it('README.md and docs/*.md name no file, variable, command, route or identifier the code no longer has', () => {
    const stale = staleNames(ROOT);
    const listed = stale.map(({ file, line, name, kind, reason }) => `  ${file}:${line} \`${name}\` (${kind}: ${reason})`).join('\n');
    assert.equal(stale.length, 0, `stale names in the docs (node scripts/docs-names.mjs lists them):\n${listed}`);
  });

  describe('the checker', () => {
    const dir = mkdtempSync(join(tmpdir(), 'docs-drift-'));
    after(() => rmSync(dir, { recursive: true, force: true }));

    const staleOnes = [
      'completeJobs',
      'lockDueJobs(db, jobs)',
      'AttemptLogWriter.flushAll',
      'src/storage/queue/dueJobs.ts',
      'handOff.ts',
      'bench/*.py',
      'REWARDS_NO_SUCH_VARIABLE',
      'rewards frobnicate',
      'rewards accounts delete',
      'rewards serve --colour',
      'npm run nope',
      'npm test -- no-such-test-file',
      'GET /v1/nonexistent',
      'DELETE /v2/requests/{id}',
      '/v2/nothing-here',
      'rewards_jobs_vanished{kind}',
      'events:delete',
      '@fastify/no-such-plugin',
      '?noSuchParameter=',
    ];
    const realOnes = [
      'takeDueJobs',
      'claimDueJobs(db, {workerId, kinds, limit, leaseMs})',
      'src/storage/queue/due-jobs.ts',
      'deliveries.ts',
      'bench/*.ts',
      'test/**',
      'src/app.ts:12',
      'DATABASE_URL',
      'PORT',
      'JOB_LEASE=3s npm start',
      'rewards serve --role worker',
      'rewards accounts create --name acme',
      'npm run bench -- --only token',
      'npm test -- oauth-token',
      'GET /v2/requests/{id}',
      'GET|POST /subscriptions',
      'POST /oauth/token',
      '…/secret/rotate',
      '/health/live',
      'rewards_jobs_pending{kind}',
      'events:read',
      '@fastify/swagger',
      '?accountId=',
      'pending',
    ];

    it('reports each stale name of each kind, and none of the real ones', () => {
      const page = join(dir, 'drift.md');
      const fenced = ['```', '`fencedBlocksAreNotChecked`', '```'];
      writeFileSync(page, ['# Drift', '', ...staleOnes.map((name) => `- stale: \`${name}\``), '', ...realOnes.map((name) => `- real: \`${name}\``), '', ...fenced, ''].join('\n'));
      const reported = staleNames(ROOT, [page]);
      assert.deepEqual(
        reported.map(({ name }) => name),
        staleOnes,
        reported.map(({ name, kind, reason }) => `${name} (${kind}: ${reason})`).join('\n'),
      );
      assert.deepEqual(
        reported.map(({ line }) => line),
        staleOnes.map((_, i) => i + 3),
      );
      assert.deepEqual(new Set(reported.map(({ kind }) => kind)), new Set(['identifier', 'path', 'env', 'cli', 'route', 'scope', 'package']));
    });
  });
});
