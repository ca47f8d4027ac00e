import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli as runCliCommands } from '../../src/cli/program.js';
import { createPostgresSchema, postgresUrlWithSchema, type TestDialect } from './databases.js';
import { eventually } from './notifications.js';

const BIN = new URL('../../bin/rewards.js', import.meta.url).pathname;

/** Environment for running the real `rewards` binary against a fresh database. */
export async function childEnvironment(dialect: TestDialect): Promise<{ env: Record<string, string>; dataDir: string; cleanup: () => Promise<void> }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'rewards-child-'));
  const schema = dialect === 'postgres' ? await createPostgresSchema() : undefined;
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    DATA_DIR: dataDir,
    DATABASE_URL: schema ? postgresUrlWithSchema(schema.schema) : `sqlite:${join(dataDir, 'rewards.db')}`,
    SECRET_KEY: randomBytes(32).toString('base64'),
    LOG_LEVEL: 'info',
  };
  return { env, dataDir, cleanup: async () => schema?.drop() };
}

/** The `rewards` commands in this process (src/cli/program.ts): set-up steps that need not pay for a process start. */
export async function runCliInProcess(args: string[], env: Record<string, string>): Promise<{ status: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const status = await runCliCommands(args, { env, out: (text) => (stdout += text), err: (text) => (stderr += text) });
  return { status, stdout, stderr };
}

/** The real `rewards` binary as a child process, as an operator runs it. */
export function runCli(args: string[], env: Record<string, string>): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, [BIN, ...args], { env, encoding: 'utf8', timeout: 60_000 });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

export interface ChildService {
  process: ChildProcess;
  url: string;
  output: () => string;
  exited: Promise<number | null>;
}

/** The `st` of a listening socket in /proc/net/tcp. */
const LISTEN = '0A';

/**
 * The TCP ports a process listens on, read from /proc (Linux). A child started with port 0 binds
 * whatever the kernel gives it and is found here: choosing a free port first and handing it over
 * races every other test process, and a readiness check can then be answered by a stranger.
 */
export function listeningPorts(pid: number): number[] {
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return []; // the process has exited: its caller sees that from its exit code
  }
  const sockets = new Set<string>();
  for (const fd of fds) {
    try {
      const socket = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (socket?.[1]) sockets.add(socket[1]);
    } catch {
      /* closed meanwhile */
    }
  }
  const ports: number[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const [, local = '', , state, , , , , , inode = ''] = line.trim().split(/\s+/);
      if (state === LISTEN && sockets.has(inode)) ports.push(Number.parseInt(local.slice(local.lastIndexOf(':') + 1), 16));
    }
  }
  return ports;
}

/**
 * Starts `rewards serve` (`bin`: another release's, test/upgrade/rolling-upgrade.test.ts) and resolves once /health/ready answers on the port the child itself
 * listens on (PORT, or METRICS_PORT for a worker, is 0 unless the caller gives one). A worker
 * without METRICS_PORT listens nowhere: it is returned at once, with no url.
 */
export async function startChildService(env: Record<string, string>, args: string[] = [], options: { bin?: string } = {}): Promise<ChildService> {
  const child = spawn(process.execPath, [options.bin ?? BIN, 'serve', ...args], { env: { PORT: '0', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const service = (url: string): ChildService => ({ process: child, url, output: () => output, exited });
  if (args.includes('worker') && env.METRICS_PORT === undefined) return service('');
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null) throw new Error(`service exited early: ${output}`);
    const [port] = child.pid === undefined ? [] : listeningPorts(child.pid);
    if (port !== undefined) {
      const url = `http://127.0.0.1:${port}`;
      try {
        if ((await fetch(`${url}/health/ready`)).ok) return service(url);
      } catch {
        /* listening, not ready yet */
      }
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGKILL');
  throw new Error(`service did not become ready: ${output}`);
}

/** Starts one `rewards serve --role worker` per environment and waits until each has logged that its job worker runs. */
export async function startWorkerProcesses(envs: Record<string, string>[]): Promise<ChildService[]> {
  const workers = await Promise.all(envs.map((env) => startChildService({ ...env, LOG_LEVEL: 'info' }, ['--role', 'worker'])));
  for (const worker of workers) {
    await eventually(
      () => {
        if (worker.process.exitCode !== null) throw new Error(`worker exited: ${worker.output()}`);
        return worker.output().includes('job worker started');
      },
      60_000,
      'a worker to start',
    );
  }
  return workers;
}

export interface CliClient {
  client_id: string;
  client_secret: string;
  scopes: string;
}

/** An account, a client and the `summer` experience (one coupon prize), made with the CLI as an operator would. */
export async function cliTenant(env: Record<string, string>, dataDir: string, name: string): Promise<{ accountId: string; client: CliClient }> {
  const cli = async (args: string[]) => {
    const result = await runCliInProcess(args, env);
    if (result.status !== 0) throw new Error(`rewards ${args.join(' ')}: ${result.stderr}`);
    return JSON.parse(result.stdout);
  };
  // The operator's commands work on an existing database only: made by `rewards migrate` (or the service's first start).
  await cli(['migrate']);
  const account = await cli(['accounts', 'create', '--name', name]);
  const client = (await cli(['clients', 'create', '--account', account.id])) as CliClient;
  const file = join(dataDir, `experience-${account.id}.json`);
  writeFileSync(file, JSON.stringify({ name: 'summer', title: 'Summer', prizes: [{ id: 'cpn', bucket: 'coupons', title: '10 off', value: 10, kind: 'coupon' }] }));
  await cli(['experiences', 'import', file, '--account', account.id]);
  return { accountId: account.id, client };
}

/** An access token of all the client's scopes, from a running service's token endpoint. */
export async function clientToken(serviceUrl: string, client: CliClient): Promise<string> {
  const response = await fetch(`${serviceUrl}/v2/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret, scope: client.scopes }),
  });
  if (response.status !== 200) throw new Error(`token: HTTP ${response.status} ${await response.text()}`);
  return ((await response.json()) as { access_token: string }).access_token;
}
