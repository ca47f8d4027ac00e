// Helpers shared by the cluster benchmarks: a throw-away PostgreSQL schema (every PostgreSQL entry
// starts on one), worker processes (`rewards serve --role worker`, which has no HTTP port to poll),
// their RSS, a tenant with a subscription to the receiver, and preloaded notifications.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { openStorage, type Storage } from '../src/storage/database.js';
import { insertNotifications, newNotificationRow } from '../src/storage/repositories/notifications.js';
import { freePort, onCore, REWARDS_BIN, ROOT_DIR, startProcess, token, type Child } from './lib.js';

export interface PgSchema {
  schema: string;
  /** DATABASE_URL for child processes: the schema travels in `options`. */
  databaseUrl: string;
  open: (poolSize?: number) => Storage;
  /** Runs one statement on a fresh connection (search_path = the schema). */
  query: <Row extends pg.QueryResultRow = pg.QueryResultRow>(statement: string, values?: unknown[]) => Promise<pg.QueryResult<Row>>;
  drop: () => Promise<void>;
}

export async function createPgSchema(url: string): Promise<PgSchema> {
  const schema = `bench_${randomBytes(5).toString('hex')}`;
  const withSchema = new URL(url);
  withSchema.searchParams.set('options', `-c search_path=${schema}`);
  const run = async (connectionString: string, statement: string, values?: unknown[]) => {
    const client = new pg.Client({ connectionString });
    await client.connect();
    try {
      return await client.query(statement, values);
    } finally {
      await client.end();
    }
  };
  await run(url, `create schema ${schema}`);
  return {
    schema,
    databaseUrl: withSchema.toString(),
    // A load generator's transactions may queue for their connection longer than a service's bound would let them.
    open: (poolSize = 2) => openStorage(url, { schema, poolSize, bounds: { poolTimeoutMs: 120_000 } }),
    query: (statement, values) => run(withSchema.toString(), statement, values),
    drop: async () => {
      await run(url, `drop schema if exists ${schema} cascade`);
    },
  };
}

export interface WorkerProcess {
  process: ChildProcess;
  pid: number;
  output(): string;
  /** SIGTERM and wait for the exit (graceful: finishes the jobs in flight). */
  stop(): Promise<void>;
}

/** Starts `rewards serve --role worker` and waits until its job worker has started. */
export async function startWorkerProcess(env: Record<string, string>): Promise<WorkerProcess> {
  const [command, args] = onCore(undefined, process.execPath, [REWARDS_BIN, 'serve', '--role', 'worker']);
  const child = spawn(command, args, {
    env: { ...process.env, CALLBACK_ALLOW_PRIVATE_NETWORKS: 'true', ...env, LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  // Keep only the tail: a long run must not grow this process's memory.
  const append = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-20_000));
  child.stdout.on('data', append);
  child.stderr.on('data', append);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  for (let i = 0; i < 600 && !output.includes('job worker started'); i++) {
    if (child.exitCode !== null) throw new Error(`worker exited: ${output}`);
    await sleep(50);
  }
  if (!output.includes('job worker started')) {
    child.kill('SIGKILL');
    throw new Error(`worker did not start: ${output}`);
  }
  return {
    process: child,
    pid: child.pid!,
    output: () => output,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Resident set size of a process in MiB (VmRSS of /proc/<pid>/status). */
export function rssMiB(pid: number): number {
  const match = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) / 1024 : NaN;
}

/** The keep-alive receiver of bench/servers/receiver.ts in its own process. */
export async function startReceiver(): Promise<Child> {
  return startProcess(['--import', 'tsx', join(ROOT_DIR, 'bench/servers/receiver.ts')], {}, '/stats', await freePort());
}

export interface ReceiverStats {
  count: number;
  first: number;
  last: number;
}

export async function receiverStats(receiverUrl: string): Promise<ReceiverStats> {
  return (await fetch(`${receiverUrl}/stats`)).json() as Promise<ReceiverStats>;
}

export async function resetReceiver(receiverUrl: string): Promise<void> {
  await (await fetch(`${receiverUrl}/reset`, { method: 'POST' })).text();
}

export async function waitForReceiverCount(receiverUrl: string, count: number, what: string, deadlineMs = 300_000): Promise<ReceiverStats> {
  const until = Date.now() + deadlineMs;
  for (;;) {
    const stats = await receiverStats(receiverUrl);
    if (stats.count >= count) return stats;
    if (Date.now() > until) throw new Error(`${what}: the receiver got ${stats.count} of ${count} calls`);
    await sleep(50);
  }
}

/** One JSON call to the service with a bearer token, its body read as `T`; throws on a non-2xx answer. */
export async function call<T = unknown>(url: string, method: string, path: string, bearer: string, body?: unknown): Promise<T> {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: { authorization: `Bearer ${bearer}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

/** The parts of the API's answers the benchmarks read. */
export interface Created {
  id: string;
}
export interface ClientCredentials {
  client_id: string;
  client_secret: string;
  scopes: string;
}
export interface Subscription {
  _id: string;
}

export interface Tenant {
  accountId: string;
  subscriptionId: string;
  callbackUrl: string;
}

/** Through a running API: an account, a client and a registered-request subscription to `receiverUrl`/hook. */
export async function setUpTenant(serviceUrl: string, operator: { client_id: string; client_secret: string }, receiverUrl: string): Promise<Tenant> {
  const admin = await token(serviceUrl, operator.client_id, operator.client_secret, 'admin');
  const account = await call<Created>(serviceUrl, 'POST', '/v2/admin/accounts', admin, { name: `bench-${randomBytes(3).toString('hex')}` });
  const client = await call<ClientCredentials>(serviceUrl, 'POST', `/v2/admin/accounts/${account.id}/clients`, admin, {});
  const bearer = await token(serviceUrl, client.client_id, client.client_secret, client.scopes);
  const subscription = await call<Subscription>(serviceUrl, 'POST', '/v2/subscriptions', bearer, { event: 'registered-request', callback: { url: `${receiverUrl}/hook` } });
  return { accountId: account.id, subscriptionId: subscription._id, callbackUrl: `${receiverUrl}/hook` };
}

type BenchTenant = Pick<Tenant, 'accountId' | 'subscriptionId' | 'callbackUrl'>;

/** The pending `registered-requests` notification a bench request (`req_<tag>_<n>`) would bring its tenant's subscription. */
export function benchNotificationRow(tenant: BenchTenant, tag: string, n: number, now: number) {
  return newNotificationRow(
    {
      accountId: tenant.accountId,
      requestId: `req_${tag}_${n}`,
      subscriptionId: tenant.subscriptionId,
      event: 'registered-requests',
      url: tenant.callbackUrl,
      payload: JSON.stringify({ id: `req_${tag}_${n}`, rewardValue: 10 }),
    },
    now,
  );
}

/** Commits `count` pending notifications (each its own delivery job, due now) in one transaction, as the request pipeline would. */
export async function preloadNotifications(storage: Storage, tenant: BenchTenant, count: number, tag = 'bench'): Promise<void> {
  const now = Date.now();
  const rows = Array.from({ length: count }, (_, i) => benchNotificationRow(tenant, tag, i, now));
  await storage.db.transaction().execute((tx) => insertNotifications(tx, rows));
}

/** Work not finished: pending jobs (request registration and processing) and pending notifications (each its own delivery job). */
export async function unfinishedWork(storage: Storage): Promise<number> {
  const jobs = await storage.db
    .selectFrom('jobs')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('state', '=', 'pending')
    .executeTakeFirstOrThrow();
  const notifications = await storage.db
    .selectFrom('notifications')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('status', '=', 'pending')
    .executeTakeFirstOrThrow();
  return Number(jobs.n) + Number(notifications.n);
}

export const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
