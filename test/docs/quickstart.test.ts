// needs: sqlite
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { CONFIG_VARIABLES } from '../../src/config.js';
import { eventually } from '../support/notifications.js';
import { unusedPort } from '../support/receivers.js';

/**
 * README.md's quick start, run as written: the fenced blocks marked `<!-- quickstart -->`, in page
 * order. The first starts the service and keeps running (its leading `npm ci &&` is dropped: the
 * test runs in this checkout, installed already); each command of the others runs to its end in
 * the same directory, then the by-hand commands the demo printed run as printed. The only changes
 * are for isolation, given to every command alike: a temporary DATA_DIR and a free PORT; the
 * settings the test runner may carry (DATABASE_URL, HOST…) are removed so that the defaults apply,
 * as on a new user's machine. The demo must find the service from those same settings.
 */
const ROOT = new URL('../..', import.meta.url).pathname;
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
/** The README's promise: a verified webhook in at most this many commands copied from it. */
const MAX_COMMANDS = 5;

/** The commands of the marked blocks, block by block: one per line, comments and blank lines left out. */
function quickstartBlocks(markdown: string): string[][] {
  return [...markdown.matchAll(/<!-- quickstart -->\n```(?:sh|bash|shell)\n([\s\S]*?)\n```/g)].map((match) =>
    match[1]!
      .split('\n')
      .map((line) => line.replace(/\s+#.*$/, '').trim())
      .filter((line) => line !== '' && !line.startsWith('#')),
  );
}

const children: ChildProcess[] = [];
const dataDir = mkdtempSync(join(tmpdir(), 'rewards-quickstart-'));

after(() => {
  // Each child was started in a process group of its own (npm start → sh → node): end the whole group.
  for (const child of children) if (child.exitCode === null && child.pid !== undefined) process.kill(-child.pid, 'SIGTERM');
  rmSync(dataDir, { recursive: true, force: true });
});

function isolatedEnv(port: number): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value === undefined || name in CONFIG_VARIABLES || name.startsWith('REWARDS_')) continue;
    env[name] = value;
  }
  return { ...env, DATA_DIR: dataDir, PORT: String(port) };
}

function shell(command: string, env: Record<string, string>): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync('sh', ['-c', command], { cwd: ROOT, env, encoding: 'utf8', timeout: 120_000 });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe("README.md's quick start [sqlite]", () => {
  it('starts the service and shows a reward request’s two webhooks, verified, with the commands as written', { timeout: 240_000 }, async () => {
    const blocks = quickstartBlocks(README);
    assert.ok(blocks.length >= 2, 'README.md marks the quick start blocks with <!-- quickstart --> (the service, then the commands against it)');
    const commands = blocks.flat();
    assert.ok(commands.length <= MAX_COMMANDS, `the quick start is at most ${MAX_COMMANDS} commands; it has ${commands.length}: ${commands.join(' | ')}`);
    assert.ok(!existsSync(join(ROOT, 'rewards.env')), 'a ./rewards.env in the checkout would configure the service and the demo: move it away to run this test');

    const [serviceBlock, ...rest] = blocks;
    assert.equal(serviceBlock!.length, 1, 'the first quick start block is the one command that starts the service');
    const start = serviceBlock![0]!.replace(/^npm ci && /, ''); // installed already: this is the checkout the tests run from
    const port = await unusedPort();
    const env = isolatedEnv(port);

    const service = spawn('sh', ['-c', start], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    children.push(service);
    let serviceOutput = '';
    service.stdout.on('data', (chunk) => (serviceOutput += chunk));
    service.stderr.on('data', (chunk) => (serviceOutput += chunk));
    await eventually(
      async () => {
        if (service.exitCode !== null) throw new Error(`"${start}" exited ${service.exitCode}: ${serviceOutput}`);
        return fetch(`http://127.0.0.1:${port}/health/ready`).then(
          (response) => response.ok,
          () => false,
        );
      },
      120_000,
      `"${start}" to answer on PORT ${port}`,
    );
    assert.match(serviceOutput, /Server listening at/, 'the line the README says to wait for');
    assert.ok(statSync(join(dataDir, 'rewards.db')).isFile(), 'the embedded SQLite database is in DATA_DIR');

    let demoOutput = '';
    for (const command of rest.flat()) {
      const result = shell(command, env);
      assert.equal(result.status, 0, `"${command}" exited ${result.status}\n${result.stdout}\n${result.stderr}`);
      demoOutput += result.stdout;
    }
    // The demo found the service from the same settings, and both webhooks of its request arrived verified.
    assert.match(demoOutput, new RegExp(`Service: http://127\\.0\\.0\\.1:${port}\\n`));
    const requestId = /Reward request (req_\w+): POST \/v2\/requests → 202/.exec(demoOutput)?.[1];
    assert.ok(requestId, demoOutput);
    for (const event of ['registered-requests', 'processed-requests']) {
      assert.match(demoOutput, new RegExp(`\\n${event} msg_\\w+: signature verified \\(standardwebhooks`), demoOutput);
    }
    assert.ok(demoOutput.includes(`Verified webhooks: registered-requests and processed-requests of ${requestId}.`), demoOutput);
    assert.match(demoOutput, /"delivered": \[/, 'the processed webhook with its prize is printed');

    // The by-hand commands it printed work as printed: a token, then a reward request accepted.
    if (spawnSync('sh', ['-c', 'command -v curl && command -v jq'], { stdio: 'ignore' }).status === 0) {
      const byHand = demoOutput.slice(demoOutput.indexOf('\nexport REWARDS_CLIENT_ID=')).split('\n\n')[0]!.trim();
      assert.match(byHand, /^export REWARDS_CLIENT_ID=cli_\w+ REWARDS_CLIENT_SECRET=\S+\nTOKEN=\$\(curl /);
      const result = shell(byHand, env);
      assert.equal(result.status, 0, result.stderr);
      const [posted] = result.stdout.split('}{');
      assert.match(posted!, /^\{"id":"req_\w+","status":"received"/, result.stdout);
    }
  });
});
