// needs: nothing
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { after, describe, it } from 'node:test';
import { parse } from 'yaml';
import { runCli } from '../../src/cli/program.js';
import { CONFIG_VARIABLES, loadConfig, parseDuration, type Config } from '../../src/config.js';
import { CONSOLE_DIST_DIR } from '../../src/console-build.js';

/**
 * Where the service runs (docs/deployment.md, "Containers and systemd"): the Dockerfile, compose.yaml
 * and the systemd units of deploy/systemd. No image is built and no container or unit is started
 * here (no Docker daemon; systemd is not PID 1). What can be checked without them is: that the
 * files run only `rewards` commands that exist, with the roles the docs name, and set only
 * variables the service reads, to values it accepts; that the image is multi-stage, non-root, holds
 * no secret and copies what `rewards` needs to run; that the compose stack follows "Behind a
 * connection pooler"; and that systemd itself accepts the units (`systemd-analyze verify`) and
 * rates their hardening (`systemd-analyze security --offline`).
 */

const ROOT = join(import.meta.dirname, '..', '..');
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');
const packageJson = JSON.parse(read('package.json')) as { bin: Record<string, string>; scripts: Record<string, string>; dependencies: Record<string, string> };
const deployment = read('docs/deployment.md');

/** What the service reads from its environment: every setting, and REWARDS_CONFIG (src/config-file.ts). */
const SERVICE_VARIABLES = new Set([...Object.keys(CONFIG_VARIABLES), 'REWARDS_CONFIG']);

// ---------------------------------------------------------------------------------------------
// The `rewards` commands, as the CLI itself lists them.

async function help(args: string[]): Promise<string> {
  let text = '';
  const io = { env: {}, out: (t: string) => void (text += t), err: (t: string) => void (text += t) };
  assert.equal(await runCli([...args, '--help'], io), 0, text);
  return text;
}
const commandsSection = (await help([])).split(/^Commands:$/m)[1] ?? '';
const SUBCOMMANDS = new Set([...commandsSection.matchAll(/^ {2}([a-z][a-z-]*)/gm)].map((m) => m[1]!));
const roleChoices = /--role <role>[\s\S]*?choices: ((?:"[a-z]+",?\s*)+)/.exec(await help(['serve']));
const ROLES = new Set([...(roleChoices?.[1] ?? '').matchAll(/"([a-z]+)"/g)].map((m) => m[1]!));

/** Fails unless `args` (after `rewards`) is a command the CLI has, with a role it accepts. */
function assertRewardsCommand(args: readonly string[], where: string): void {
  assert.ok(SUBCOMMANDS.has(args[0] ?? ''), `${where}: \`rewards ${args.join(' ')}\` is not a command of the CLI (${[...SUBCOMMANDS].join(', ')})`);
  const role = args.indexOf('--role');
  if (role >= 0) assert.ok(ROLES.has(args[role + 1] ?? ''), `${where}: --role ${args[role + 1]} is not one of ${[...ROLES].join(', ')}`);
}

/** Whether docs/deployment.md names this process as a `rewards …` span ("Processes", "The minimum for production"). */
const documented = (command: string) => deployment.includes(`\`${command}\``);

// ---------------------------------------------------------------------------------------------
// The Dockerfile, as instructions.

interface Instruction {
  name: string;
  args: string;
  line: number;
}

function dockerfileInstructions(text: string): Instruction[] {
  const instructions: Instruction[] = [];
  let pending: Instruction | undefined;
  text.split('\n').forEach((raw, index) => {
    const line = raw.trim();
    if (line.startsWith('#') || (line === '' && !pending)) return;
    const continued = line.endsWith('\\');
    const body = continued ? line.slice(0, -1).trim() : line;
    if (pending) pending.args = `${pending.args} ${body}`.trim();
    else {
      const match = /^([A-Za-z]+)\s+(.*)$/.exec(body);
      assert.ok(match, `Dockerfile:${index + 1}: not an instruction: ${line}`);
      pending = { name: match[1]!.toUpperCase(), args: match[2]!, line: index + 1 };
    }
    if (!continued) {
      instructions.push(pending);
      pending = undefined;
    }
  });
  return instructions;
}

const dockerfile = dockerfileInstructions(read('Dockerfile'));
const stages: Instruction[][] = [];
for (const instruction of dockerfile) {
  if (instruction.name === 'FROM') stages.push([]);
  stages.at(-1)?.push(instruction);
}
const runtime = stages.at(-1) ?? [];
const buildStages = stages.slice(0, -1);
const all = (stage: Instruction[], name: string) => stage.filter((i) => i.name === name);
/** ENV and ARG as name → value (`ENV A=1 B=2` and the old `ENV A 1`). */
function assignments(stage: Instruction[], name: 'ENV' | 'ARG'): Map<string, string> {
  const values = new Map<string, string>();
  for (const { args } of all(stage, name)) {
    const pairs = [...args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|\S*)/g)];
    if (pairs.length === 0) {
      const [key, ...rest] = args.split(/\s+/);
      values.set(key!, rest.join(' '));
    }
    for (const [, key, value] of pairs) values.set(key!, value!.replace(/^"(.*)"$/, '$1'));
  }
  return values;
}
const runtimeEnv = assignments(runtime, 'ENV');
/** The JSON array of an exec-form CMD, ENTRYPOINT or HEALTHCHECK CMD. */
const execForm = (args: string) => JSON.parse(args) as string[];

describe('the Dockerfile', () => {
  it('is multi-stage: a build stage that installs with npm ci, builds the console and drops the development dependencies', () => {
    assert.ok(buildStages.length >= 1, 'a build stage and a runtime stage');
    const runs = buildStages.flatMap((stage) => all(stage, 'RUN').map((i) => i.args)).join('\n');
    assert.match(runs, /\bnpm ci\b/);
    assert.ok(packageJson.scripts['build:console'], 'package.json has build:console');
    assert.match(runs, /\bnpm run build:console\b/);
    assert.match(runs, /\bnpm prune --omit=dev\b/, 'the runtime stage gets the production dependencies only');
  });

  it('builds and runs on one Node.js line, a production one, from the official bookworm-slim image', () => {
    const froms = stages.map((stage) => stage[0]!.args.split(/\s+/)[0]!);
    assert.equal(new Set(froms).size, 1, `every stage FROM the same image (a native module built for one line runs on that line): ${froms.join(', ')}`);
    assert.match(froms[0]!, /^node:\$\{NODE_VERSION\}-bookworm-slim$/);
    const version = /^ARG NODE_VERSION=(\d+)$/m.exec(read('Dockerfile'));
    assert.ok(version && ['22', '24'].includes(version[1]!), 'NODE_VERSION defaults to a production line (docs/deployment.md, "Node.js lines")');
  });

  it('copies into the runtime stage what `rewards` needs to run, and installs in the build stage only what the context holds', () => {
    const copied = all(runtime, 'COPY')
      .filter((i) => i.args.startsWith('--from='))
      .flatMap((i) => i.args.split(/\s+/).slice(1, -1))
      .map((source) => relative('/app', source));
    // package.json (its "type": "module"), its bin and what the bin imports, tsx's tsconfig.json, the built console.
    const bin = packageJson.bin.rewards!;
    const imported = [...read(bin).matchAll(/import\('(\.[^']+)'\)/g)].map((m) => relative(ROOT, join(ROOT, bin, '..', m[1]!)).split('/')[0]!);
    const needed = ['package.json', 'tsconfig.json', 'node_modules', bin.split('/')[0]!, ...imported, relative(ROOT, CONSOLE_DIST_DIR)];
    for (const path of needed) assert.ok(copied.includes(path), `the runtime stage copies ${path} (it copies ${copied.join(', ')})`);
    // The build stage's own COPYs must get past .dockerignore, an allow-list.
    const ignore = read('.dockerignore')
      .split('\n')
      .filter((l) => l.trim() && !l.startsWith('#'));
    assert.equal(ignore[0], '*', '.dockerignore starts by excluding everything');
    const allowed = ignore.filter((l) => l.startsWith('!')).map((l) => l.slice(1).replace(/\/$/, ''));
    for (const { args } of buildStages.flatMap((stage) => all(stage, 'COPY'))) {
      for (const source of args.split(/\s+/).slice(0, -1)) {
        const path = source.replace(/\/$/, '');
        assert.ok(
          allowed.some((entry) => path === entry || path.startsWith(`${entry}/`)),
          `.dockerignore lets ${source} into the context`,
        );
      }
    }
  });

  it('runs TypeScript the way the CLI does: tsx and every package src/ imports are production dependencies', () => {
    assert.match(read(packageJson.bin.rewards!), /from 'tsx\/esm\/api'/);
    assert.match(packageJson.scripts.start!, /--import tsx /);
    const packageName = (specifier: string) =>
      specifier
        .split('/')
        .slice(0, specifier.startsWith('@') ? 2 : 1)
        .join('/');
    const packages = new Set<string>(['tsx']);
    const walk = (dir: string): string[] => readdirSync(dir).flatMap((name) => (statSync(join(dir, name)).isDirectory() ? walk(join(dir, name)) : [join(dir, name)]));
    for (const file of walk(join(ROOT, 'src')).filter((f) => /\.(ts|mjs)$/.test(f))) {
      const source = readFileSync(file, 'utf8');
      for (const [, kind, specifier] of source.matchAll(/^\s*(?:import|export)\s+(type\s+)?(?:[^'";]*?\s+from\s+)?'([^'.][^']*)'/gm)) {
        if (kind || specifier!.startsWith('node:')) continue;
        packages.add(packageName(specifier!));
      }
      for (const [, specifier] of source.matchAll(/\b(?:import|require)\('([^'.][^']*)'\)/g)) if (!specifier!.startsWith('node:')) packages.add(packageName(specifier!));
    }
    const missing = [...packages].filter((name) => !packageJson.dependencies[name]);
    assert.deepEqual(missing, [], 'imported at run time but not in "dependencies" (npm prune --omit=dev would drop them)');
  });

  it('runs as a non-root numeric user, with no secret baked in', () => {
    const users = all(runtime, 'USER');
    assert.equal(users.length, 1);
    const match = /^(\d+)(?::(\d+))?$/.exec(users[0]!.args);
    assert.ok(match, `USER is numeric (uid:gid), so that runAsNonRoot can check it: ${users[0]!.args}`);
    assert.notEqual(Number(match[1]), 0);
    for (const [name, value] of [...assignments(dockerfile, 'ENV'), ...assignments(dockerfile, 'ARG')]) {
      assert.doesNotMatch(name, /SECRET|PASSWORD|TOKEN|CREDENTIAL/i, `${name} is not set in the image`);
      assert.doesNotMatch(value, /:\/\/[^/@\s]*:[^/@\s]*@/, `${name} holds no password`);
    }
    assert.ok(!runtimeEnv.has('DATABASE_URL'), 'DATABASE_URL comes from where the container runs');
    for (const { line, args } of dockerfile) assert.doesNotMatch(args, /SECRET_KEY\s*=|[A-Za-z0-9+/]{43}=/, `Dockerfile:${line} writes no key`);
    for (const secret of ['**/rewards.env', '**/.env', '**/*.db']) assert.ok(read('.dockerignore').split('\n').includes(secret), `.dockerignore excludes ${secret}`);
  });

  it('sets only variables the service reads: DATA_DIR on the volume, HOST on every interface, the exposed PORT', () => {
    for (const name of runtimeEnv.keys()) assert.ok(SERVICE_VARIABLES.has(name), `ENV ${name} is not read by the service (src/config.ts CONFIG_VARIABLES)`);
    const config = loadConfig(Object.fromEntries(runtimeEnv));
    assert.equal(config.host, '0.0.0.0');
    assert.deepEqual(
      all(runtime, 'VOLUME').map((i) => i.args),
      [config.dataDir],
    );
    assert.deepEqual(
      all(runtime, 'EXPOSE').map((i) => i.args),
      [String(config.port)],
    );
  });

  it('stops with the signal `rewards serve` handles, and probes readiness with Node, not curl', () => {
    assert.deepEqual(
      all(runtime, 'STOPSIGNAL').map((i) => i.args),
      ['SIGTERM'],
    );
    assert.match(read('src/cli/program.ts'), /process\.once\('SIGTERM', /);
    const [check] = all(runtime, 'HEALTHCHECK');
    assert.ok(check, 'a HEALTHCHECK');
    const command = execForm(check.args.replace(/^(--\S+\s+)+CMD\s+/, ''));
    assert.equal(command[0], 'node');
    assert.match(command.join(' '), /process\.env\.PORT \|\| 8080\) \+ '\/health\/ready'/);
    assert.doesNotMatch(check.args, /\b(curl|wget)\b/);
    assert.match(read('src/http/routes/health.ts'), /'\/health\/ready'/);
  });

  it('starts `rewards` with a command it has', () => {
    const entrypoint = execForm(all(runtime, 'ENTRYPOINT')[0]!.args);
    const cmd = execForm(all(runtime, 'CMD')[0]!.args);
    assert.equal(entrypoint.at(-1), 'rewards', 'the entrypoint ends with the rewards command (linked to bin/rewards.js)');
    assert.ok(all(runtime, 'RUN').some((i) => i.args.includes(`ln -s /app/${packageJson.bin.rewards} /usr/local/bin/rewards`)));
    assertRewardsCommand(cmd, 'CMD');
  });
});

// ---------------------------------------------------------------------------------------------
// compose.yaml

interface Service {
  image?: string;
  build?: unknown;
  command?: string[];
  environment?: Record<string, string>;
  user?: string;
  read_only?: boolean;
  cap_drop?: string[];
  security_opt?: string[];
  volumes?: (string | { type: string; target: string })[];
  healthcheck?: { test?: string[]; disable?: boolean };
  depends_on?: Record<string, { condition: string }>;
  deploy?: { replicas?: number };
  restart?: string;
  stop_signal?: string;
  stop_grace_period?: string;
}
const compose = parse(read('compose.yaml'), { merge: true }) as { services: Record<string, Service> };
const services = compose.services;
/** The services that run this repository's image (built from the Dockerfile). */
const rewardsServices = Object.entries(services).filter(([, s]) => s.build !== undefined);
const byCommand = (...command: string[]) => rewardsServices.filter(([, s]) => s.command?.join(' ') === command.join(' '));
const POSTGRES = Object.entries(services).find(([, s]) => /^postgres:/.test(s.image ?? ''));
const PGBOUNCER = Object.entries(services).find(([, s]) => /pgbouncer/.test(s.image ?? ''));

/** Compose's interpolation with the values a .env would give (`${X}`, `${X:-default}`, `${X:?message}`). */
const DOT_ENV: Record<string, string> = { SECRET_KEY: randomBytes(32).toString('base64'), POSTGRES_PASSWORD: randomBytes(24).toString('hex') };
function interpolate(value: string): string {
  return value.replace(/\$\{([A-Z_][A-Z0-9_]*)(?:(:-|:\?)([^}]*))?\}/g, (_, name: string, op?: string, rest?: string) => {
    if (DOT_ENV[name] !== undefined) return DOT_ENV[name];
    assert.equal(op, ':-', `\${${name}} has no default and is not one of the .env variables the docs give (${Object.keys(DOT_ENV).join(', ')})`);
    return rest ?? '';
  });
}
/** A service's environment as its process sees it, and the configuration the service makes of it. */
function environment(service: Service): Record<string, string> {
  return Object.fromEntries(Object.entries(service.environment ?? {}).map(([k, v]) => [k, interpolate(String(v))]));
}
function configOf(service: Service): Config {
  return loadConfig({ ...Object.fromEntries(runtimeEnv), ...environment(service) });
}

describe('compose.yaml', () => {
  it('runs PostgreSQL 15, PgBouncer in transaction mode, one `rewards migrate`, one API process and two workers', () => {
    assert.ok(POSTGRES, 'a PostgreSQL service');
    assert.match(POSTGRES[1].image!, /^postgres:15\b/);
    assert.ok(PGBOUNCER, 'a PgBouncer service');
    assert.equal(PGBOUNCER[1].environment?.POOL_MODE, 'transaction');
    const replicas = (list: [string, Service][]) => list.reduce((n, [, s]) => n + (s.deploy?.replicas ?? 1), 0);
    assert.equal(replicas(byCommand('migrate')), 1);
    assert.equal(byCommand('migrate')[0]![1].restart, 'no', 'the migration runs once');
    assert.equal(replicas(byCommand('serve', '--role', 'api')), 1);
    assert.equal(replicas(byCommand('serve', '--role', 'worker')), 2);
    assert.equal(rewardsServices.length, 3, `no other process: ${rewardsServices.map(([name]) => name).join(', ')}`);
  });

  it('runs only `rewards` commands the CLI has, each a process docs/deployment.md names', () => {
    for (const [name, service] of rewardsServices) {
      assert.ok(service.command, `${name} says what it runs`);
      assertRewardsCommand(service.command, `compose.yaml ${name}`);
      assert.ok(documented(`rewards ${service.command.join(' ')}`), `docs/deployment.md names \`rewards ${service.command.join(' ')}\``);
    }
  });

  it('sets only variables the service reads, to values it accepts, and takes the secrets from .env', () => {
    for (const [name, service] of rewardsServices) {
      for (const variable of Object.keys(service.environment ?? {})) assert.ok(SERVICE_VARIABLES.has(variable), `${name}: ${variable} is not read by the service`);
      assert.match(service.environment!.SECRET_KEY!, /^\$\{SECRET_KEY:\?[^}]+\}$/, `${name}: SECRET_KEY from .env, required`);
      configOf(service); // throws, naming the variable, on a value the service refuses
    }
    const text = read('compose.yaml');
    for (const [, user, password] of text.matchAll(/postgres(?:ql)?:\/\/([^:@\s]+):([^@\s]+)@/g))
      assert.match(password!, /^\$\{POSTGRES_PASSWORD:\?[^}]+\}$/, `the password of ${user} comes from .env`);
    assert.match(POSTGRES![1].environment!.POSTGRES_PASSWORD!, /^\$\{POSTGRES_PASSWORD:\?[^}]+\}$/);
    for (const name of Object.keys(DOT_ENV)) assert.ok(deployment.includes(name) && text.includes(`${name}=`), `the .env the docs and compose.yaml's header write holds ${name}`);
  });

  it('follows "Behind a connection pooler": queries through PgBouncer, LISTEN direct, prepared statements only where PgBouncer holds them', () => {
    const host = (url: string | undefined) => (url ? new URL(url).hostname : undefined);
    const bouncer = PGBOUNCER![1].environment!;
    for (const command of [
      ['serve', '--role', 'api'],
      ['serve', '--role', 'worker'],
    ]) {
      for (const [name, service] of byCommand(...command)) {
        const config = configOf(service);
        assert.equal(host(config.databaseUrl), PGBOUNCER![0], `${name}: DATABASE_URL through PgBouncer`);
        if (config.databasePreparedStatements)
          assert.ok(Number(bouncer.MAX_PREPARED_STATEMENTS) > 0, `${name}: prepared statements need PgBouncer's max_prepared_statements (1.21+), or DATABASE_PREPARED_STATEMENTS=off`);
        // A heartbeat queued in PgBouncer longer than DATABASE_HEARTBEAT_TIMEOUT would count as silence.
        assert.ok(Number(bouncer.QUERY_WAIT_TIMEOUT) * 1000 < config.databaseBounds.heartbeatTimeoutMs, `${name}: PgBouncer's query_wait_timeout below DATABASE_HEARTBEAT_TIMEOUT`);
        if (command.includes('worker')) assert.equal(host(config.databaseListenUrl), POSTGRES![0], `${name}: DATABASE_LISTEN_URL direct to PostgreSQL`);
      }
    }
    assert.match(PGBOUNCER![1].image!, /:v?1\.(2[1-9]|[3-9]\d)/, 'PgBouncer 1.21 or later (max_prepared_statements)');
  });

  it('runs the service non-root, on a read-only root file system, without capabilities; DATA_DIR on a volume, /tmp on tmpfs', () => {
    const imageUser = all(runtime, 'USER')[0]!.args;
    for (const [name, service] of rewardsServices) {
      assert.equal(service.user, imageUser, `${name}: the image's user`);
      assert.equal(service.read_only, true, `${name}: read_only`);
      assert.deepEqual(service.cap_drop, ['ALL'], `${name}: cap_drop ALL`);
      assert.ok(service.security_opt?.includes('no-new-privileges:true'), `${name}: no-new-privileges`);
      const targets = (service.volumes ?? []).map((v) => (typeof v === 'string' ? { type: 'volume', target: v.split(':')[1] } : v));
      assert.ok(
        targets.some((v) => v.type === 'volume' && v.target === configOf(service).dataDir),
        `${name}: DATA_DIR on a volume`,
      );
      assert.ok(
        targets.some((v) => v.type === 'tmpfs' && v.target === '/tmp'),
        `${name}: /tmp on tmpfs (tsx caches compiled sources there)`,
      );
    }
  });

  it('checks health, starts in order, and stops gracefully', () => {
    for (const [name, service] of Object.entries(services)) {
      if (service.command?.[0] === 'migrate') assert.equal(service.healthcheck?.disable, true, `${name}: a one-shot has no health`);
      else assert.ok(service.healthcheck?.test?.length, `${name} has a healthcheck`);
    }
    for (const [name, service] of rewardsServices.filter(([, s]) => s.command?.[0] === 'serve')) {
      const port = service.command!.includes('worker') ? 'METRICS_PORT' : 'PORT';
      assert.match(service.healthcheck!.test!.join(' '), new RegExp(`process\\.env\\.${port} \\+ '/health/ready'`), `${name}: readiness on ${port}`);
      assert.ok(configOf(service)[port === 'PORT' ? 'port' : 'metricsPort'], `${name}: ${port} is set`);
      assert.equal(service.depends_on?.migrate?.condition, 'service_completed_successfully', `${name} starts after the migration`);
      assert.equal(service.depends_on?.[PGBOUNCER![0]]?.condition, 'service_healthy', `${name} waits for PgBouncer`);
      if (configOf(service).databaseListenUrl) assert.equal(service.depends_on?.[POSTGRES![0]]?.condition, 'service_healthy', `${name} waits for PostgreSQL`);
    }
    assert.equal(byCommand('migrate')[0]![1].depends_on?.[POSTGRES![0]]?.condition, 'service_healthy');
    assert.equal(PGBOUNCER![1].depends_on?.[POSTGRES![0]]?.condition, 'service_healthy');
    for (const [name, service] of rewardsServices) {
      assert.equal(service.stop_signal ?? 'SIGTERM', 'SIGTERM');
      // `rewards serve` exits at the latest 30 s after SIGTERM; Compose's default is 10 s.
      assert.ok(parseDuration(service.stop_grace_period ?? '10s') > 30_000, `${name}: stop_grace_period above the service's 30 s`);
    }
  });
});

// ---------------------------------------------------------------------------------------------
// deploy/systemd

const UNIT_DIR = join(ROOT, 'deploy', 'systemd');
const units = readdirSync(UNIT_DIR).filter((name) => name.endsWith('.service'));

/** A unit file's [Service] settings, each key with its values in order. */
function serviceSettings(text: string): Map<string, string[]> {
  const settings = new Map<string, string[]>();
  let section = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const header = /^\[(.+)\]$/.exec(line);
    if (header) section = header[1]!;
    else if (section === 'Service') {
      const [key, ...value] = line.split('=');
      settings.set(key!, [...(settings.get(key!) ?? []), value.join('=')]);
    }
  }
  return settings;
}

const HARDENING: Record<string, string> = {
  NoNewPrivileges: 'yes',
  ProtectSystem: 'strict',
  ProtectHome: 'yes',
  PrivateTmp: 'yes',
  PrivateDevices: 'yes',
  CapabilityBoundingSet: '',
  RestrictAddressFamilies: 'AF_INET AF_INET6 AF_UNIX',
  KillSignal: 'SIGTERM',
  Restart: 'on-failure',
};

describe('the systemd units', () => {
  it('are rewards.service (`rewards serve`) and the template rewards@.service (one role per instance)', () => {
    assert.deepEqual(units.sort(), ['rewards.service', 'rewards@.service']);
    const exec = (unit: string) => serviceSettings(readFileSync(join(UNIT_DIR, unit), 'utf8')).get('ExecStart')![0]!;
    assert.equal(exec('rewards.service'), `/usr/bin/node /opt/rewards/${packageJson.bin.rewards} serve`);
    assert.equal(exec('rewards@.service'), `/usr/bin/node /opt/rewards/${packageJson.bin.rewards} serve --role %i`);
    for (const role of ['api', 'worker']) {
      assertRewardsCommand(['serve', '--role', role], `rewards@${role}.service`);
      assert.ok(documented(`rewards serve --role ${role}`), `docs/deployment.md names the ${role} role`);
    }
  });

  for (const unit of units) {
    it(`${unit}: hardened, with DATA_DIR its one writable place, and stopped as the service shuts down`, () => {
      const text = readFileSync(join(UNIT_DIR, unit), 'utf8');
      const settings = serviceSettings(text);
      const one = (key: string) => settings.get(key)?.at(-1);
      for (const [key, value] of Object.entries(HARDENING)) assert.equal(one(key), value, `${key}=${value}`);
      assert.ok(settings.get('SystemCallFilter')?.includes('@system-service'));
      assert.match(one('User') ?? '', /^[a-z][a-z0-9-]*$/);
      assert.notEqual(one('User'), 'root');
      assert.ok(settings.get('EnvironmentFile')?.includes('/etc/rewards/rewards.env'));
      // V8's JIT needs W+X memory: MemoryDenyWriteExecute=yes would stop Node, and the unit says why it is not set.
      assert.ok(!settings.has('MemoryDenyWriteExecute'));
      assert.match(text, /# Not MemoryDenyWriteExecute=yes: V8's JIT/);
      const environment = Object.fromEntries((settings.get('Environment') ?? []).map((e) => e.split('=') as [string, string]));
      for (const name of Object.keys(environment)) assert.ok(SERVICE_VARIABLES.has(name), `Environment=${name} is read by the service`);
      assert.equal(environment.DATA_DIR, `/var/lib/${one('StateDirectory')}`, 'DATA_DIR is the StateDirectory');
      assert.equal(one('StateDirectoryMode'), '0700');
      // `rewards serve` exits at the latest 30 s after SIGTERM.
      assert.ok(parseDuration(`${one('TimeoutStopSec')}s`) > 30_000);
    });
  }

  it('share their hardening', () => {
    const [a, b] = units.map((unit) => serviceSettings(readFileSync(join(UNIT_DIR, unit), 'utf8')));
    for (const key of new Set([...a!.keys(), ...b!.keys()])) {
      if (['ExecStart', 'EnvironmentFile'].includes(key)) continue;
      assert.deepEqual(a!.get(key), b!.get(key), key);
    }
  });

  const analyze = '/usr/bin/systemd-analyze';
  describe('systemd-analyze', { skip: existsSync(analyze) ? false : `${analyze} is not installed` }, () => {
    // Copies whose ExecStart runs this Node.js: verify checks that the program exists.
    const dir = mkdtempSync(join(tmpdir(), 'rewards-units-'));
    after(() => rmSync(dir, { recursive: true, force: true }));
    for (const unit of units) writeFileSync(join(dir, unit), readFileSync(join(UNIT_DIR, unit), 'utf8').replace(/^ExecStart=\/usr\/bin\/node /m, `ExecStart=${process.execPath} `));
    const instances = units.flatMap((unit) => (unit.includes('@') ? ['api', 'worker'].map((role) => unit.replace('@', `@${role}`)) : [unit]));

    it('verify accepts the units, without a warning', () => {
      for (const unit of instances) {
        const run = spawnSync(analyze, ['verify', '--man=no', join(dir, unit)], { encoding: 'utf8', timeout: 30_000 });
        assert.equal(run.status, 0, `${unit}: ${run.stderr}`);
        const warnings = run.stderr.split('\n').filter((line) => line.includes(dir) || line.includes('rewards'));
        assert.deepEqual(warnings, [], unit);
      }
    });

    const offline = spawnSync(analyze, ['security', '--help'], { encoding: 'utf8' }).stdout.includes('--offline');
    it('security rates their exposure below 2.0 ("OK")', { skip: offline ? false : 'this systemd-analyze has no --offline' }, () => {
      for (const unit of instances) {
        const run = spawnSync(analyze, ['security', '--offline=true', '--threshold=20', '--no-pager', join(dir, unit)], { encoding: 'utf8', timeout: 30_000 });
        const level = /Overall exposure level for \S+: ([\d.]+)/.exec(run.stdout)?.[1];
        assert.equal(run.status, 0, `${unit}: exposure ${level ?? '?'} (systemd-analyze security --offline=true deploy/systemd/${unit.replace(/@\w+/, '@')})\n${run.stderr}`);
      }
    });
  });
});
