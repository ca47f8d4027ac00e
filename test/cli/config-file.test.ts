// needs: database
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import pg from 'pg';
import { runCli } from '../../src/cli/program.js';
import { CONFIG_VARIABLES, loadConfig } from '../../src/config.js';
import { DEFAULT_CONFIG_FILES } from '../../src/config-file.js';
import { openStorage } from '../../src/storage/database.js';
import { listeningPorts } from '../support/child-service.js';
import { createPostgresSchema, postgresUrl, postgresUrlWithSchema, testDialects } from '../support/databases.js';

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'rewards.js');
const SYSTEM_FILE = DEFAULT_CONFIG_FILES.find((file) => file.startsWith('/'))!;
// The tests without --config or REWARDS_CONFIG look at the system's file too; on a machine that has one they would read it.
const systemFileSkip = existsSync(SYSTEM_FILE) ? `${SYSTEM_FILE} exists on this machine` : false;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
  json: any;
}

const parseJson = (text: string): any => {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
};

/** Only what an operator's login shell would have: none of the service's settings. */
const bareEnv = (extra: Record<string, string> = {}) => ({ PATH: process.env.PATH ?? '', LOG_LEVEL: 'silent', ...extra });

/** The real `rewards` binary, run in `cwd` with exactly `env`. */
async function rewards(cwd: string, env: Record<string, string>, ...args: string[]): Promise<Run> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [BIN, ...args], { cwd, env, timeout: 60_000 });
    return { code: 0, stdout, stderr, json: parseJson(stdout) };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: Number(failed.code ?? 1), stdout: failed.stdout, stderr: failed.stderr, json: parseJson(failed.stdout) };
  }
}

/** The same commands in this process (program.ts), for the cases that need no process of their own. */
async function rewardsInProcess(env: Record<string, string>, ...args: string[]): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, { env, out: (text) => (stdout += text), err: (text) => (stderr += text) });
  return { code, stdout, stderr, json: parseJson(stdout) };
}

/** `rewards serve` in `cwd` until it answers /health/ready; then SIGTERM. Resolves with its output. */
async function serveOnce(cwd: string, env: Record<string, string>): Promise<string> {
  const child = spawn(process.execPath, [BIN, 'serve'], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  try {
    for (let i = 0; ; i++) {
      if (child.exitCode !== null || i > 300) throw new Error(`the service did not become ready: ${output}`);
      const [port] = child.pid === undefined ? [] : listeningPorts(child.pid);
      const ready =
        port !== undefined &&
        (await fetch(`http://127.0.0.1:${port}/health/ready`).then(
          (r) => r.ok,
          () => false,
        ));
      if (ready) break;
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    child.kill('SIGTERM');
  }
  assert.equal(await exited, 0, output);
  return output;
}

const temporary: string[] = [];
const tempDir = (prefix: string) => {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  temporary.push(dir);
  return dir;
};
after(() => {
  for (const dir of temporary) rmSync(dir, { recursive: true, force: true });
});

describe('the configuration file and the commands that need an existing database [sqlite]', () => {
  let serviceDir: string;
  let configFile: string;
  const secretKey = randomBytes(32).toString('base64');

  before(async () => {
    // A deployment: its settings in rewards.env beside it, found there by `rewards serve` (the default location).
    serviceDir = tempDir('rewards-service-');
    configFile = join(serviceDir, 'rewards.env');
    writeFileSync(configFile, ['# the service', `DATA_DIR=${join(serviceDir, 'var')}`, 'PORT=0', "HOST='127.0.0.1'", `SECRET_KEY="${secretKey}"`, 'LOG_LEVEL=info', ''].join('\n'));
    const output = await serveOnce(serviceDir, { PATH: process.env.PATH ?? '' });
    assert.match(output, /settings read from the configuration file/);
    assert.ok(output.includes(configFile), output);
  });

  it('rewards serve reads its settings from the file and creates the database on its first start', () => {
    assert.ok(existsSync(join(serviceDir, 'var', 'rewards.db')));
    assert.ok(existsSync(join(serviceDir, 'var', 'operator-credentials.json')));
    // SECRET_KEY came from the file: no key was generated.
    assert.ok(!existsSync(join(serviceDir, 'var', 'secret.key')));
    assert.ok(!existsSync(join(serviceDir, 'data')));
  });

  it('an operator command elsewhere, without the settings, refuses: it names the database it looked for and creates nothing', { skip: systemFileSkip }, async () => {
    const elsewhere = tempDir('rewards-operator-');
    const run = await rewards(elsewhere, bareEnv(), 'accounts', 'create', '--name', 'acme');
    assert.equal(run.code, 2, run.stderr);
    assert.equal(run.stdout, '');
    assert.match(run.stderr, new RegExp(`^rewards: There is no database at ${join(elsewhere, 'data', 'rewards.db')}\\.`));
    assert.match(run.stderr, /DATABASE_URL is not set, so it is the default, rewards\.db in DATA_DIR; DATA_DIR is not set either, so it is \.\/data in the working directory/);
    assert.ok(run.stderr.includes(`No configuration file was found (looked for ${join(elsewhere, 'rewards.env')} and ${SYSTEM_FILE})`), run.stderr);
    assert.match(run.stderr, /--config FILE, or REWARDS_CONFIG=FILE/);
    assert.match(run.stderr, /rewards serve\) or by rewards migrate/);
    assert.deepEqual(readdirSync(elsewhere), [], 'no database, key file or directory was created');
  });

  it("with --config or REWARDS_CONFIG naming the service's file, a command elsewhere works on the service's database", async () => {
    const elsewhere = tempDir('rewards-operator-');
    const created = await rewards(elsewhere, bareEnv(), 'accounts', 'create', '--name', 'acme', '--config', configFile);
    assert.equal(created.code, 0, created.stderr);
    assert.equal(created.json.name, 'acme');
    const client = await rewardsInProcess(bareEnv({ REWARDS_CONFIG: configFile }), 'clients', 'create', '--account', 'acme');
    assert.equal(client.code, 0, client.stderr);
    assert.deepEqual(readdirSync(elsewhere), []);

    const storage = openStorage(`sqlite:${join(serviceDir, 'var', 'rewards.db')}`);
    try {
      const account = await storage.db.selectFrom('accounts').select('id').where('name', '=', 'acme').executeTakeFirst();
      assert.equal(account?.id, created.json.id);
      const clients = await storage.db.selectFrom('oauth_clients').select('client_id').where('account_id', '=', created.json.id).execute();
      assert.deepEqual(
        clients.map((c) => c.client_id),
        [client.json.client_id],
      );
    } finally {
      await storage.close();
    }
  });

  it('environment variables override the file; config show prints each setting with its source, secrets masked', async () => {
    const elsewhere = tempDir('rewards-operator-');
    const shown = await rewardsInProcess(bareEnv({ REWARDS_CONFIG: configFile, LOG_LEVEL: 'warn', TOKEN_TTL: '', RETRY_INTERVAL: '' }), 'config', 'show');
    assert.equal(shown.code, 0, shown.stderr);
    assert.deepEqual(shown.json.configFile, { path: configFile, from: 'REWARDS_CONFIG' });
    assert.equal(shown.json.searched, undefined);
    const settings = shown.json.settings;
    assert.deepEqual(Object.keys(settings).sort(), Object.keys(CONFIG_VARIABLES).sort());
    assert.deepEqual(settings.LOG_LEVEL, { value: 'warn', source: 'environment' });
    assert.deepEqual(settings.DATA_DIR, { value: join(serviceDir, 'var'), source: 'config file' });
    assert.deepEqual(settings.DATABASE_URL, { value: `sqlite:${join(serviceDir, 'var', 'rewards.db')}`, source: 'default' });
    assert.deepEqual(settings.HOST, { value: '127.0.0.1', source: 'config file' });
    assert.deepEqual(settings.SECRET_KEY, { value: `****${secretKey.slice(-4)}`, source: 'config file' });
    // An empty variable does not hide the file's or the default's value.
    assert.deepEqual(settings.TOKEN_TTL, { value: '1h', source: 'default' });
    assert.deepEqual(settings.RETRY_INTERVAL, { value: '3h', source: 'default' });
    assert.ok(!shown.stdout.includes(secretKey.slice(0, 20)), 'the key is masked');

    // A database named in the environment wins over the file's: here one that does not exist, which is refused, said to come from the environment.
    const other = join(elsewhere, 'other.db');
    const refused = await rewardsInProcess(bareEnv({ REWARDS_CONFIG: configFile, DATABASE_URL: `sqlite:${other}` }), 'keys', 'rotate');
    assert.equal(refused.code, 2, refused.stderr);
    assert.ok(refused.stderr.startsWith(`rewards: There is no database at ${other}.`), refused.stderr);
    assert.match(refused.stderr, /DATABASE_URL is set in the environment\./);
    assert.ok(refused.stderr.includes(`Configuration file: ${configFile} (named by REWARDS_CONFIG)`), refused.stderr);
    assert.ok(!existsSync(other));
  });

  it('a key the service does not know is refused, by the commands and by rewards serve, naming it and its line', async () => {
    const dir = tempDir('rewards-typo-');
    const file = join(dir, 'rewards.env');
    writeFileSync(file, [`DATA_DIR=${join(dir, 'var')}`, 'DATABSE_URL=postgres://db/rewards', 'PORT=0', ''].join('\n'));
    const command = await rewardsInProcess(bareEnv(), 'accounts', 'create', '--name', 'acme', '--config', file);
    assert.equal(command.code, 2);
    assert.equal(command.stderr, `rewards: Invalid configuration file ${file}:\n  - line 2: DATABSE_URL is not a setting of the service (did you mean DATABASE_URL?)\n`);
    const serve = await rewards(dir, bareEnv(), 'serve');
    assert.equal(serve.code, 2, serve.stderr);
    assert.match(serve.stderr, /line 2: DATABSE_URL is not a setting of the service/);
    assert.deepEqual(readdirSync(dir), ['rewards.env'], 'the service did not start: no database');
  });

  it('a file\'s other mistakes are refused line by line: export, a comment after a value, a relative path, a key set twice, no "="', async () => {
    const dir = tempDir('rewards-bad-file-');
    const file = join(dir, 'bad.env');
    writeFileSync(file, ['export PORT=8080', 'LOG_LEVEL=info # quiet', 'DATABASE_URL=sqlite:data/rewards.db', 'PORT=9090', 'HOST: 0.0.0.0', 'TOKEN_TTL="2h" # long', ''].join('\n'));
    const run = await rewardsInProcess(bareEnv({ REWARDS_CONFIG: file }), 'config', 'show');
    assert.equal(run.code, 2);
    assert.equal(
      run.stderr,
      [
        `rewards: Invalid configuration file ${file}:`,
        '  - line 1: write KEY=VALUE without "export" (a systemd EnvironmentFile does not take it)',
        '  - line 2: the value of LOG_LEVEL holds a "#": quote the value, or put the comment on a line of its own',
        '  - line 3: DATABASE_URL must name an absolute path here ("sqlite:data/rewards.db"): the service and the commands run in different directories, and a relative path would mean another place for each',
        '  - line 5: expected KEY=VALUE, got "HOST: 0.0.0.0"',
        '  - line 6: the quoted value of TOKEN_TTL must end with its quote, on the same line (a comment goes on a line of its own)',
        '',
      ].join('\n'),
    );
    writeFileSync(file, 'PORT=8080\nPORT=9090\n');
    assert.match((await rewardsInProcess(bareEnv({ REWARDS_CONFIG: file }), 'config', 'show')).stderr, /line 2: PORT is set again \(first on line 1\); keep one/);

    // A bad value names the file it is in; a named file that is missing is an error, not the defaults.
    writeFileSync(file, 'TOKEN_TTL=2\n');
    const badValue = await rewardsInProcess(bareEnv({ REWARDS_CONFIG: file }), 'config', 'show');
    assert.match(badValue.stderr, new RegExp(`TOKEN_TTL \\(in ${file}\\): expected a number with a unit`));
    const missing = await rewardsInProcess(bareEnv(), '--config', join(dir, 'nope.env'), 'config', 'show');
    assert.equal(missing.code, 2);
    assert.equal(missing.stderr, `rewards: cannot read the configuration file ${join(dir, 'nope.env')} (given with --config): there is no such file\n`);
  });

  it('every command that works on the database refuses a missing one and creates nothing; migrate creates it', async () => {
    const dir = tempDir('rewards-missing-');
    const empty = join(dir, 'empty.env');
    writeFileSync(empty, '# nothing\n');
    const database = join(dir, 'db', 'rewards.db');
    const env = bareEnv({ REWARDS_CONFIG: empty, DATABASE_URL: `sqlite:${database}`, DATA_DIR: join(dir, 'db'), SECRET_KEY: randomBytes(32).toString('base64') });
    writeFileSync(join(dir, 'x.json'), '{"name":"x","title":"X"}');
    const commands = [
      ['accounts', 'create', '--name', 'acme'],
      ['clients', 'create', '--account', 'acme'],
      ['clients', 'rotate-secret', 'cli_x'],
      ['experiences', 'import', join(dir, 'x.json'), '--account', 'acme'],
      ['secrets', 'reencrypt'],
      ['console', 'link', '--account', 'acme'],
      ['keys', 'rotate'],
    ];
    for (const args of commands) {
      const run = await rewardsInProcess(env, ...args);
      assert.equal(run.code, 2, `${args.join(' ')}: ${run.stderr}`);
      assert.ok(run.stderr.startsWith(`rewards: There is no database at ${database}.\n  DATABASE_URL is set in the environment.`), run.stderr);
    }
    assert.deepEqual(readdirSync(dir).sort(), ['empty.env', 'x.json']);

    // A file that is there but holds none of the service's tables is not the service's database either.
    mkdirSync(join(dir, 'db'));
    writeFileSync(database, '');
    const unmigrated = await rewardsInProcess(env, 'accounts', 'create', '--name', 'acme');
    assert.equal(unmigrated.code, 2);
    assert.match(unmigrated.stderr, /has none of the service's tables/);

    assert.equal((await rewardsInProcess(env, 'migrate')).code, 0);
    const created = await rewardsInProcess(env, 'accounts', 'create', '--name', 'acme');
    assert.equal(created.code, 0, created.stderr);
  });

  it('without SECRET_KEY, a command refuses when the service generated no key file, and never makes one', async () => {
    const dir = tempDir('rewards-nokey-');
    const empty = join(dir, 'empty.env');
    writeFileSync(empty, '');
    const env = bareEnv({ REWARDS_CONFIG: empty, DATABASE_URL: `sqlite:${join(dir, 'rewards.db')}`, DATA_DIR: join(dir, 'var') });
    assert.equal((await rewardsInProcess(env, 'migrate')).code, 0);
    const run = await rewardsInProcess(env, 'accounts', 'create', '--name', 'acme');
    assert.equal(run.code, 2);
    assert.ok(run.stderr.startsWith(`rewards: SECRET_KEY is not set, and there is no key file at ${join(dir, 'var', 'secret.key')}`), run.stderr);
    assert.match(run.stderr, /SECRET_KEY is not set in the environment nor in .*empty\.env; the key file is looked for in DATA_DIR: DATA_DIR is set in the environment/);
    assert.ok(!existsSync(join(dir, 'var')));
    const shown = await rewardsInProcess(env, 'config', 'show');
    assert.deepEqual(shown.json.settings.SECRET_KEY, { value: null, source: 'default', keyFile: join(dir, 'var', 'secret.key') });
  });
});

describe('the configuration variables', () => {
  it('the file accepts exactly the variables loadConfig reads', () => {
    const read = new Set<string>();
    loadConfig(new Proxy({}, { get: (_, name) => (read.add(String(name)), undefined) }));
    assert.deepEqual([...read].sort(), Object.keys(CONFIG_VARIABLES).sort());
  });
});

for (const dialect of testDialects().filter((d) => d === 'postgres')) {
  describe(`operator commands on a database never migrated [${dialect}]`, () => {
    it('refuse, naming the database and its schema, and create no table', async () => {
      const { schema } = await createPostgresSchema();
      const dir = tempDir('rewards-pg-');
      const empty = join(dir, 'empty.env');
      writeFileSync(empty, '');
      const env = bareEnv({ REWARDS_CONFIG: empty, DATABASE_URL: postgresUrlWithSchema(schema), SECRET_KEY: randomBytes(32).toString('base64'), DATA_DIR: join(dir, 'var') });
      const run = await rewards(dir, env, 'accounts', 'create', '--name', 'acme');
      assert.equal(run.code, 2, run.stderr);
      const database = new URL(postgresUrl()).pathname.slice(1);
      assert.ok(run.stderr.includes(`database "${database}"`), run.stderr);
      assert.match(run.stderr, new RegExp(`has none of the service's tables in schema "${schema}": it was never migrated`));
      assert.match(run.stderr, /DATABASE_URL is set in the environment\./);
      const client = new pg.Client({ connectionString: postgresUrl() });
      await client.connect();
      try {
        const tables = await client.query('select table_name from information_schema.tables where table_schema = $1', [schema]);
        assert.equal(tables.rowCount, 0);
      } finally {
        await client.end();
      }
      assert.equal(existsSync(join(dir, 'var')), false);

      // Migrated, the same command works.
      assert.equal((await rewardsInProcess(env, 'migrate')).code, 0);
      const created = await rewardsInProcess(env, 'accounts', 'create', '--name', 'acme');
      assert.equal(created.code, 0, created.stderr);
    });
  });
}
