import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { unusedPort } from '../test/support/receivers.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import pg from 'pg';
import { Pool } from 'undici';

export interface BenchOptions {
  quick: boolean;
  /** PostgreSQL URL for entries that also measure PostgreSQL (BENCH_POSTGRES_URL). */
  postgresUrl: string | undefined;
}

/** Seconds of each HTTP load phase: 10, or 2 with --quick. */
export const loadSeconds = (options: BenchOptions) => (options.quick ? 2 : 10);

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
}

export interface BenchRow {
  entry: string;
  figure: string;
  baseline: string;
  ratio: number;
  goal?: string;
  met?: boolean;
  /** A check, not a goal: when missed, the suite says FAILED and exits 1. */
  required?: boolean;
}

const ROOT = new URL('..', import.meta.url).pathname;
export const REWARDS_BIN = join(ROOT, 'bin/rewards.js');

/** A free loopback port (the one helper shared by tests and benchmarks). */
export const freePort = unusedPort;

/**
 * Core pinning (Linux `taskset`, two or more cores): the load generator, which is this process,
 * on core 0 and the processes under test on core 1, so that each side has a core of its own.
 * Left to the scheduler, a server and autocannon were now and then put on one core: the same
 * token endpoint then cost far more CPU per request (more wake-ups, fewer requests per
 * read), and ratios jumped from one run to the next.
 * `BENCH_PIN=0` leaves placement to the scheduler.
 */
/** Every core of the machine (not availableParallelism(), which shrinks to 1 once this process is pinned). */
const ALL_CORES = `0-${cpus().length - 1}`;

function canPin(): boolean {
  if (process.env.BENCH_PIN === '0' || process.platform !== 'linux' || cpus().length < 2) return false;
  try {
    execFileSync('taskset', ['-p', String(process.pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
export const PINNING = canPin();
const LOAD_CORE = 0;
export const SERVER_CORE = 1;

/**
 * Pins this process (every thread) to the load generator's core, or with `false` lets it run on
 * every core again; a no-op without pinning. Entries that measure one server against a load
 * generator pin (token, ingest); entries whose service spreads its work over threads and processes
 * (delivery, backlog, scale-out) run unpinned, as deployed: with the receiver alone on one core the
 * service's two threads shared the other, and its delivery throughput fell.
 */
export function pinLoadGenerator(pinned = true): void {
  if (PINNING) execFileSync('taskset', ['-apc', pinned ? String(LOAD_CORE) : ALL_CORES, String(process.pid)], { stdio: 'ignore' });
}

/**
 * `command args` as started on `core` (from its first instruction, so every thread inherits it),
 * or on every core: a child would otherwise inherit this process's pinning to the load core.
 */
export function onCore(core: number | undefined, command: string, args: string[]): [string, string[]] {
  if (!PINNING) return [command, args];
  return ['taskset', ['-c', core !== undefined ? String(core) : ALL_CORES, command, ...args]];
}

/**
 * Waits (up to `maxMs`) until the machine is quiet: nearly idle CPU and disk for half a second,
 * from /proc (elsewhere it returns at once), and, with `postgresUrl`, a database with nothing of
 * its own to finish. An entry that follows PostgreSQL work otherwise ran beside its checkpoint and
 * autovacuum: delivery on SQLite then measured well under its ratio alone (both sides slower,
 * the service's two threads most), and the scale-out entry, right after the backlog entry had
 * written and dropped its million jobs, once collapsed for three workers.
 * For the database it asks for a CHECKPOINT (the role needs pg_checkpoint, which
 * scripts/postgres-setup.sh grants; without it the wait is for autovacuum only), so the dirty
 * pages and WAL of the previous entry are written now instead of during the next measurement,
 * and waits until no autovacuum worker and no other session of the database is busy.
 */
export async function waitForQuietMachine(options: { maxMs?: number; postgresUrl?: string | undefined } = {}): Promise<void> {
  if (process.platform !== 'linux') return;
  const maxMs = options.maxMs ?? 30_000;
  const until = Date.now() + maxMs;
  if (options.postgresUrl) await quietPostgres(options.postgresUrl, until);
  const sample = () => {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    const idle = fields[3]! + (fields[4] ?? 0);
    return { idle, total: fields.reduce((sum, n) => sum + n, 0), writtenSectors: writtenSectors() };
  };
  while (Date.now() < until) {
    const before = sample();
    await new Promise((resolve) => setTimeout(resolve, 500));
    const after = sample();
    const busy = 1 - (after.idle - before.idle) / Math.max(1, after.total - before.total);
    // Under ~4 MiB/s of writes (512-byte sectors over half a second): no checkpoint or flush under way.
    const writing = after.writtenSectors - before.writtenSectors > 4096;
    if (busy < 0.1 && !writing) return;
  }
  process.stderr.write(`  (the machine stayed busy for ${maxMs / 1000} s; measuring anyway)\n`);
}

/** Sectors written to the machine's disks so far (whole disks only, from /proc/diskstats). */
function writtenSectors(): number {
  let total = 0;
  for (const line of readFileSync('/proc/diskstats', 'utf8').split('\n')) {
    const fields = line.trim().split(/\s+/);
    // Whole devices (vda, sda, nvme0n1), not their partitions nor loop/ram devices.
    if (fields.length < 10 || !/^(vd[a-z]|sd[a-z]|xvd[a-z]|nvme\d+n\d+)$/.test(fields[2]!)) continue;
    total += Number(fields[9]);
  }
  return total;
}

async function quietPostgres(url: string, until: number): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('checkpoint').catch(() => {
      /* no pg_checkpoint: the autovacuum wait below still applies */
    });
    while (Date.now() < until) {
      const { rows } = await client.query<{ busy: string }>(
        `select count(*) as busy from pg_stat_activity
          where pid <> pg_backend_pid() and (backend_type = 'autovacuum worker' or (datname = current_database() and state not in ('idle')))`,
      );
      if (Number(rows[0]!.busy) === 0) return;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  } finally {
    await client.end();
  }
}

export interface Child {
  process: ChildProcess;
  url: string;
  stop(): Promise<void>;
}

/** Starts a server process (on `core` when pinning) and waits until `readyPath` answers. */
export async function startProcess(args: string[], env: Record<string, string>, readyPath: string, port: number, core?: number): Promise<Child> {
  const [command, commandArgs] = onCore(core, process.execPath, args);
  const child = spawn(command, commandArgs, { env: { ...process.env, ...env, PORT: String(port) }, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null) throw new Error(`process exited: ${stderr}`);
    try {
      if ((await fetch(`${url}${readyPath}`)).ok) break;
    } catch {
      /* not yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    process: child,
    url,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/** The operator's client, as the service writes it to operator-credentials.json on first start. */
interface OperatorCredentials {
  client_id: string;
  client_secret: string;
}

/** A fresh rewards service (SQLite unless DATABASE_URL is given) in its own process (on `core` when pinning). */
export async function startRewards(extraEnv: Record<string, string> = {}, args: string[] = [], core?: number): Promise<Child & { dataDir: string; operator: OperatorCredentials }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'rewards-bench-'));
  const port = await freePort();
  const env = {
    DATA_DIR: dataDir,
    SECRET_KEY: randomBytes(32).toString('base64'),
    LOG_LEVEL: 'warn',
    CALLBACK_ALLOW_PRIVATE_NETWORKS: 'true',
    ...extraEnv,
  };
  // BENCH_CPU_PROF=DIR: every service process writes a V8 CPU profile per thread into DIR on exit.
  const profile = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  const child = await startProcess([...profile, REWARDS_BIN, 'serve', ...args], env, '/health/ready', port, core);
  const operator = JSON.parse(readFileSync(join(dataDir, 'operator-credentials.json'), 'utf8')) as OperatorCredentials;
  return { ...child, dataDir, operator };
}

/** Closed-loop load with autocannon (32 connections unless given). */
export async function load(options: autocannon.Options): Promise<LoadResult> {
  const result = await autocannon({ connections: 32, pipelining: 1, ...options });
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
  };
}

/**
 * Closed-loop loads on several targets, taken in turns: after one unmeasured warm-up each,
 * `rounds` phases of `seconds` per target, round-robin. A machine that speeds up or slows down
 * during the run (shared hosts do) then weighs on every target alike, so their ratios hold; one
 * phase per target, one after the other, once gave ratios from 0.26 to 0.54 for the same code.
 * Returns, per target, the mean requests/s over its phases and its worst p50 and p99.
 */
export async function interleavedLoads<K extends string>(targets: Record<K, autocannon.Options>, options: { rounds: number; seconds: number; warmupSeconds: number }): Promise<Record<K, LoadResult>> {
  const entries = Object.entries(targets) as Array<[K, autocannon.Options]>;
  const phases = {} as Record<K, LoadResult[]>;
  for (const [name, target] of entries) {
    await autocannon({ connections: 32, pipelining: 1, ...target, duration: options.warmupSeconds });
    phases[name] = [];
  }
  for (let round = 0; round < options.rounds; round++) {
    for (const [name, target] of entries) phases[name].push(await load({ ...target, duration: options.seconds }));
  }
  return Object.fromEntries(
    (Object.entries(phases) as Array<[K, LoadResult[]]>).map(([name, results]) => [
      name,
      {
        rps: results.reduce((sum, r) => sum + r.rps, 0) / results.length,
        p50: Math.max(...results.map((r) => r.p50)),
        p99: Math.max(...results.map((r) => r.p99)),
        errors: results.reduce((sum, r) => sum + r.errors, 0),
        non2xx: results.reduce((sum, r) => sum + r.non2xx, 0),
      },
    ]),
  ) as Record<K, LoadResult>;
}

/**
 * Open-loop load at a steady rate: request i is sent at start + i/rate, whether or not earlier
 * ones were answered, so a slow service shows up as latency rather than as a lower send rate.
 * (autocannon's `overallRate` sends each second's quota back to back at the start of the second:
 * bursts of `rate` requests, which measures burst queueing, not latency at that rate.)
 */
export async function pacedLoad(options: {
  url: string;
  method: 'POST' | 'GET';
  headers: Record<string, string>;
  body?: string;
  rate: number;
  seconds: number;
  connections?: number;
}): Promise<{ sent: number; ok: number; failed: number }> {
  const target = new URL(options.url);
  const pool = new Pool(target.origin, { connections: options.connections ?? 64, pipelining: 1, keepAliveTimeout: 10_000 });
  const total = Math.round(options.rate * options.seconds);
  const calls: Promise<void>[] = [];
  let ok = 0;
  let failed = 0;
  const started = performance.now();
  for (let sent = 0; sent < total;) {
    const due = Math.min(total, Math.floor(((performance.now() - started) * options.rate) / 1000) + 1);
    for (; sent < due; sent++) {
      calls.push(
        pool
          .request({ path: target.pathname + target.search, method: options.method, headers: options.headers, body: options.body })
          .then(async (response) => {
            await response.body.dump();
            if (response.statusCode >= 200 && response.statusCode < 300) ok += 1;
            else failed += 1;
          })
          .catch(() => {
            failed += 1;
          }),
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  await Promise.all(calls);
  await pool.close();
  return { sent: total, ok, failed };
}

/** `requestsPerCall` > 1: a load whose every call is that many requests, given in calls/s. */
export function describeLoad(result: LoadResult, requestsPerCall = 1): string {
  const failures = result.errors + result.non2xx;
  const rate = `${Math.round(result.rps / requestsPerCall).toLocaleString('en-US')} ${requestsPerCall === 1 ? 'req/s' : 'calls/s'}`;
  return `${rate}, p99 ${result.p99} ms${failures ? ` (${failures} failed!)` : ''}`;
}

export async function token(url: string, clientId: string, clientSecret: string, scope: string): Promise<string> {
  const response = await fetch(`${url}/v2/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret, scope }),
  });
  if (!response.ok) throw new Error(`token: ${response.status} ${await response.text()}`);
  return ((await response.json()) as { access_token: string }).access_token;
}

export const ROOT_DIR = ROOT;
