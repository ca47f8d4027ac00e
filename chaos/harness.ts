import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { openStorage, type Storage } from '../src/storage/database.js';
import { runCli } from '../test/support/child-service.js';
import { unusedPort } from '../test/support/receivers.js';
import type { ChaosReceiver } from './receiver.js';

const BIN = new URL('../bin/rewards.js', import.meta.url).pathname;

export type Dialect = 'sqlite' | 'postgres';

/** The service's settings in every run: short intervals so that retries and leases happen within seconds. */
export const SERVICE_ENV = {
  RETRY_INTERVAL: '300ms',
  RETRY_MAX_ATTEMPTS: '12',
  CALLBACK_TIMEOUT: '1s',
  JOB_LEASE: '3s',
  CALLBACK_ALLOW_PRIVATE_NETWORKS: 'true',
  LOG_LEVEL: 'warn',
  // The open-loop load stands for many clients from one address: while a fault stalls answers it
  // holds more connections than the per-address cap allows one client.
  HTTP_MAX_CONNECTIONS_PER_ADDRESS: '0',
};

export interface Environment {
  dialect: Dialect;
  env: Record<string, string>;
  dataDir: string;
  storage(): Storage;
  cleanup(): Promise<void>;
}

/** A fresh database (a SQLite file in `dataDir`, or a PostgreSQL schema) with its settings. */
export async function createEnvironment(dialect: Dialect, postgresUrl: string | undefined, dataDir = mkdtempSync(join(tmpdir(), 'rewards-chaos-'))): Promise<Environment> {
  const secretKey = randomBytes(32).toString('base64');
  if (dialect === 'sqlite') {
    const databaseUrl = `sqlite:${join(dataDir, 'rewards.db')}`;
    return {
      dialect,
      dataDir,
      env: { ...SERVICE_ENV, DATA_DIR: dataDir, DATABASE_URL: databaseUrl, SECRET_KEY: secretKey },
      storage: () => openStorage(databaseUrl),
      cleanup: async () => rmSync(dataDir, { recursive: true, force: true }),
    };
  }
  const schema = `chaos_${randomBytes(5).toString('hex')}`;
  const admin = async (statement: string) => {
    const client = new pg.Client({ connectionString: postgresUrl });
    await client.connect();
    await client.query(statement).finally(() => client.end());
  };
  await admin(`create schema ${schema}`);
  const url = new URL(postgresUrl!);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return {
    dialect,
    dataDir,
    env: { ...SERVICE_ENV, DATA_DIR: dataDir, DATABASE_URL: url.toString(), SECRET_KEY: secretKey },
    storage: () => openStorage(postgresUrl!, { schema, poolSize: 2 }),
    cleanup: async () => {
      await admin(`drop schema if exists ${schema} cascade`);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export interface Service {
  process: ChildProcess;
  url: string;
  output(): string;
  exited: Promise<number | null>;
}

/** Starts `rewards serve [--role …]`; an API-serving process is returned once /health/ready answers 200. */
export async function startService(environment: Environment, args: string[] = [], port?: number): Promise<Service> {
  const listen = port ?? (await unusedPort());
  const child = spawn(process.execPath, [BIN, 'serve', ...args], { env: { PATH: process.env.PATH ?? '', ...environment.env, PORT: String(listen) }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const append = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-50_000));
  child.stdout.on('data', append);
  child.stderr.on('data', append);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = `http://127.0.0.1:${listen}`;
  const service = { process: child, url, output: () => output, exited };
  if (args.includes('worker')) {
    for (let i = 0; i < 300 && !output.includes('job worker started'); i++) await sleep(20);
    return service;
  }
  for (let i = 0; i < 500; i++) {
    if (child.exitCode !== null) throw new Error(`the service exited at start: ${output.slice(-2000)}`);
    try {
      if ((await fetch(`${url}/health/ready`)).ok) return service;
    } catch {
      /* not listening yet */
    }
    await sleep(20);
  }
  child.kill('SIGKILL');
  throw new Error(`the service did not become ready: ${output.slice(-2000)}`);
}

export async function kill9(service: Service): Promise<void> {
  if (service.process.exitCode === null && service.process.signalCode === null) service.process.kill('SIGKILL');
  await service.exited;
}

export async function stopGracefully(service: Service): Promise<void> {
  if (service.process.exitCode === null && service.process.signalCode === null) service.process.kill('SIGTERM');
  await service.exited;
}

export interface Tenant {
  token: string;
  initialStock: number;
}

/**
 * An account with a client, the `chaos` experience (one coupon with `stock` items, so that some
 * requests get it and the rest are canceled) and one subscription per event to the receiver.
 */
export async function setUpTenant(environment: Environment, serviceUrl: string, receiver: ChaosReceiver, stock: number): Promise<Tenant> {
  const cli = <T = unknown>(args: string[]): T => {
    const result = runCli(args, { PATH: process.env.PATH ?? '', ...environment.env });
    if (result.status !== 0) throw new Error(`rewards ${args.join(' ')}: ${result.stderr}`);
    return JSON.parse(result.stdout) as T;
  };
  const account = cli<{ id: string }>(['accounts', 'create', '--name', `chaos-${randomBytes(3).toString('hex')}`]);
  const client = cli<{ client_id: string; client_secret: string; scopes: string }>(['clients', 'create', '--account', account.id]);
  const file = join(environment.dataDir, 'experience.json');
  writeFileSync(file, JSON.stringify({ name: 'chaos', title: 'Chaos', prizes: [{ id: 'cpn', bucket: 'coupons', title: 'Coupon', value: 10, kind: 'coupon', stock }] }));
  cli(['experiences', 'import', file, '--account', account.id]);
  const response = await fetch(`${serviceUrl}/v2/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret, scope: client.scopes }),
  });
  const token = ((await response.json()) as { access_token: string }).access_token;
  for (const event of ['registered-request', 'processed-request']) {
    const created = await fetch(`${serviceUrl}/v2/subscriptions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ event, callback: { url: `${receiver.url}/${event}` } }),
    });
    if (created.status !== 201) throw new Error(`subscription: ${created.status} ${await created.text()}`);
  }
  return { token, initialStock: stock };
}

export interface LoadResult {
  sent: number;
  /** Ids of the requests answered 202. */
  acknowledged: string[];
  /** Answers that were not 202, by status (0: no answer: connection refused or reset, or none within the client's timeout). */
  refused: Map<number, number>;
  /** Every request: when it left, when its answer (or its failure) came, and its status (0: no answer). */
  timeline: Array<{ sentAt: number; doneAt: number; status: number }>;
}

export interface LoadOptions {
  /** How long the client waits for an answer (default 10 s). */
  timeoutMs?: number;
  /** Consulted before each request: true stops the load early (the run has seen what it came for). */
  enough?: () => boolean;
}

/**
 * Open-loop load: request i leaves at start + i/rate whatever happened to the earlier ones, to
 * whichever of `urls()` is current (the service may be down or restarted meanwhile), for
 * `seconds` at most.
 */
export async function openLoopLoad(urls: () => string[], token: string, rate: number, seconds: number, options: LoadOptions = {}): Promise<LoadResult> {
  const result: LoadResult = { sent: 0, acknowledged: [], refused: new Map(), timeline: [] };
  const inFlight = new Set<Promise<void>>();
  const started = performance.now();
  const total = Math.round(rate * seconds);
  for (let i = 0; i < total && !options.enough?.(); i++) {
    const due = started + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 1) await sleep(wait);
    const targets = urls();
    const url = targets[i % targets.length]!;
    result.sent += 1;
    const sentAt = Date.now();
    const answered = (status: number) => {
      result.timeline.push({ sentAt, doneAt: Date.now(), status });
      if (status !== 202) result.refused.set(status, (result.refused.get(status) ?? 0) + 1);
    };
    const call = fetch(`${url}/v2/requests`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'idempotency-key': randomUUID() },
      body: JSON.stringify({ experience: 'chaos', event: 'purchase', data: { n: i } }),
      signal: AbortSignal.timeout(options.timeoutMs ?? 10_000),
    })
      .then(async (response) => {
        const body = await response.text();
        if (response.status === 202) result.acknowledged.push((JSON.parse(body) as { id: string }).id);
        answered(response.status);
      })
      .catch(() => answered(0))
      .finally(() => inFlight.delete(call));
    inFlight.add(call);
  }
  await Promise.all(inFlight);
  return result;
}

export interface Books {
  sent: number;
  acknowledged: number;
  /** Requests answered 202 that the database does not hold. */
  lost: number;
  /** Requests in the database: the acknowledged ones plus those committed but not answered before a kill. */
  stored: number;
  final: number;
  due: number;
  delivered: number;
  duplicated: number;
  problems: string[];
}

const FINAL = new Set(['processed', 'rejected', 'failed']);

/**
 * Waits until every stored request is final and every due notification has reached the receiver
 * (or `ms` pass). Stored, not only acknowledged: a request committed just before a kill was never
 * answered, and it must be carried through like the others.
 */
export async function waitForQuiescence(storage: Storage, acknowledged: string[], receiver: ChaosReceiver, ms: number): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    const rows = await requestRows(storage);
    const stored = new Set(rows.map((row) => row.id));
    const due = dueNotifications(rows);
    const delivered = deliveredPairs(receiver);
    if (acknowledged.every((id) => stored.has(id)) && rows.every((row) => FINAL.has(row.status)) && [...due].every((pair) => delivered.has(pair))) return;
    await sleep(250);
  }
}

/** Every request of the run's database (one tenant per run). */
async function requestRows(storage: Storage) {
  return storage.db.selectFrom('requests').select(['id', 'status', 'delivered']).execute();
}

/** (request, event) pairs the routing calls for: registered-requests for every registered or rejected request, processed-requests for every processed one. */
function dueNotifications(rows: { id: string; status: string }[]): Set<string> {
  const due = new Set<string>();
  for (const row of rows) {
    if (row.status === 'processed' || row.status === 'rejected' || row.status === 'registered') due.add(`${row.id} registered-requests`);
    if (row.status === 'processed') due.add(`${row.id} processed-requests`);
  }
  return due;
}

function deliveredPairs(receiver: ChaosReceiver): Set<string> {
  return new Set(receiver.calls.filter((call) => call.answer === 'ok').map((call) => `${call.requestId} ${call.event}`));
}

/**
 * The books after quiescence: every request answered 202 exists and is final; every due
 * notification reached the receiver at least once, every repeat under the same webhook-id; the
 * prize's stock never went below zero and every item taken is one delivered coupon.
 */
export async function checkBooks(storage: Storage, load: LoadResult, receiver: ChaosReceiver, tenant: Tenant): Promise<Books> {
  const problems: string[] = [];
  const rows = await requestRows(storage);
  const stored = new Set(rows.map((row) => row.id));
  const missing = load.acknowledged.filter((id) => !stored.has(id)).length;
  if (missing > 0) problems.push(`${missing} requests answered 202 do not exist`);
  const notFinal = rows.filter((row) => !FINAL.has(row.status));
  if (notFinal.length > 0) problems.push(`${notFinal.length} requests are not final (e.g. ${notFinal[0]!.id}: ${notFinal[0]!.status})`);
  const failed = rows.filter((row) => row.status === 'failed');
  if (failed.length > 0) problems.push(`${failed.length} requests failed processing`);

  const due = dueNotifications(rows);
  const ok = receiver.calls.filter((call) => call.answer === 'ok');
  const delivered = deliveredPairs(receiver);
  const undelivered = [...due].filter((pair) => !delivered.has(pair));
  if (undelivered.length > 0) problems.push(`${undelivered.length} due notifications never reached the receiver (e.g. ${undelivered[0]})`);
  const idsOfPair = new Map<string, Set<string>>();
  for (const call of receiver.calls) {
    const pair = `${call.requestId} ${call.event}`;
    idsOfPair.set(pair, (idsOfPair.get(pair) ?? new Set()).add(call.webhookId));
  }
  const split = [...idsOfPair].filter(([, ids]) => ids.size > 1);
  if (split.length > 0) problems.push(`${split.length} notifications were sent under more than one webhook-id`);
  const strangers = [...idsOfPair.keys()].filter((pair) => !due.has(pair));
  if (strangers.length > 0) problems.push(`${strangers.length} calls for notifications nobody was due (e.g. ${strangers[0]})`);
  const okPerPair = new Map<string, number>();
  for (const call of ok) okPerPair.set(`${call.requestId} ${call.event}`, (okPerPair.get(`${call.requestId} ${call.event}`) ?? 0) + 1);
  const duplicated = [...okPerPair.values()].filter((n) => n > 1).length;

  const prize = await storage.db.selectFrom('prizes').select(['stock']).executeTakeFirstOrThrow();
  const coupons = rows.flatMap((row) => (row.delivered ? (JSON.parse(row.delivered) as unknown[]) : []));
  if (prize.stock === null || prize.stock < 0) problems.push(`the prize's stock is ${prize.stock}`);
  else if (tenant.initialStock - prize.stock !== coupons.length) {
    problems.push(`${tenant.initialStock - prize.stock} items were taken from stock for ${coupons.length} coupons delivered`);
  }
  return {
    sent: load.sent,
    acknowledged: load.acknowledged.length,
    lost: missing,
    stored: rows.length,
    final: rows.length - notFinal.length,
    due: due.size,
    delivered: [...due].filter((pair) => delivered.has(pair)).length,
    duplicated,
    problems,
  };
}
