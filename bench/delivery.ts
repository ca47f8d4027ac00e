import { createHmac, randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import { openStorage, type Storage } from '../src/storage/database.js';
import { call, createPgSchema, preloadNotifications, unfinishedWork, type ClientCredentials, type Created, type Subscription } from './cluster.js';
import { freePort, pacedLoad, ROOT_DIR, startProcess, startRewards, token, waitForQuietMachine, type BenchOptions, type BenchRow, type Child } from './lib.js';

/**
 * Entry 5: the notification delivery engine.
 * (a) Throughput: N notifications (rows + delivery jobs, committed at once into the running
 *     service's database) delivered to a keep-alive receiver in its own process, measured at the
 *     receiver from first to last arrival; baseline: a plain undici Agent POST loop to the same
 *     receiver with the same 8 connections the engine allows per host, run just before each
 *     measurement; both after a 500-call warm-up. Goal ≥ 50 % of it.
 * (b) Latency from registration (`notifications.created_at`, set in the registration batch before
 *     it commits, so the batch's own time counts) to the arrival at the receiver, with requests sent
 *     at a steady 1,000/s, open loop (one notification each). Goal p50 ≤ 5 ms, p99 ≤ 50 ms. Ratio =
 *     figure / goal (≤ 1 meets it). A second run at 100/s, far below the throughput, shows the
 *     latency without queueing. The `peers` entry times from the enqueuing COMMIT instead, the
 *     same clock for every system.
 * `benchDelivery` runs SQLite, and PostgreSQL too when BENCH_POSTGRES_URL is set (own schema).
 */

/** Connections per origin the engine uses (DEFAULT_CONCURRENCY_LIMITS.perHost). */
const PER_HOST = 8;
const RATE = 1000;
/** Deliveries before the measured ones, as the baseline loop is warmed with 500 calls. */
const WARMUP = 500;
const LIGHT_RATE = 100;

export interface Stats {
  count: number;
  first: number;
  last: number;
}

const get = async <T>(url: string): Promise<T> => (await fetch(url)).json() as Promise<T>;
export const reset = (receiverUrl: string) => fetch(`${receiverUrl}/reset`, { method: 'POST' });

export async function waitForCount(receiverUrl: string, count: number, what: string, deadlineMs = 120_000): Promise<Stats> {
  const until = Date.now() + deadlineMs;
  for (;;) {
    const stats = await get<Stats>(`${receiverUrl}/stats`);
    if (stats.count >= count) return stats;
    if (Date.now() > until) throw new Error(`${what}: the receiver got ${stats.count} of ${count} calls`);
    await sleep(50);
  }
}

export const perSecond = (stats: Stats) => ((stats.count - 1) / (stats.last - stats.first)) * 1000;
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const ms = (n: number) => `${n.toFixed(n < 10 ? 2 : 1)} ms`;

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** The baseline: `count` signed-looking POSTs through one undici Agent, PER_HOST at a time. */
export async function plainPostLoop(receiverUrl: string, count: number): Promise<{ stats: Stats; p50: number; p99: number }> {
  await reset(receiverUrl);
  const agent = new Agent({ connections: PER_HOST, keepAliveTimeout: 10_000 });
  const secret = randomBytes(32);
  const body = JSON.stringify({ id: 'req_bench', rewardValue: 10 });
  const latencies: number[] = [];
  let next = 0;
  const worker = async () => {
    while (next < count) {
      next += 1;
      const id = `msg_${next}`;
      const timestamp = Math.floor(Date.now() / 1000);
      const signature = createHmac('sha256', secret).update(`${id}.${timestamp}.${body}`).digest('base64');
      const started = performance.now();
      const response = await request(`${receiverUrl}/hook`, {
        method: 'POST',
        dispatcher: agent,
        body,
        headers: { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': `v1,${signature}` },
      });
      await response.body.dump();
      latencies.push(performance.now() - started);
      if (response.statusCode !== 204) throw new Error(`baseline: HTTP ${response.statusCode}`);
    }
  };
  await Promise.all(Array.from({ length: PER_HOST }, worker));
  await agent.close();
  latencies.sort((a, b) => a - b);
  return { stats: await waitForCount(receiverUrl, count, 'baseline'), p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
}

/** Waits until the queue is empty (deliveries recorded, earlier requests processed) so phases do not overlap. */
async function waitForEmptyQueue(storage: Storage): Promise<void> {
  for (;;) {
    if ((await unfinishedWork(storage)) === 0) return;
    await sleep(50);
  }
}

/** Requests at `rate`/s for `seconds` (one registered-requests notification each); latency = receiver arrival − notifications.created_at. */
async function latencyPhase(serviceUrl: string, receiverUrl: string, storage: Storage, bearer: string, rate: number, seconds: number, what: string) {
  await waitForEmptyQueue(storage);
  await reset(receiverUrl);
  const startedAt = Date.now();
  const load = await pacedLoad({
    url: `${serviceUrl}/v2/requests`,
    method: 'POST',
    headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' },
    body: JSON.stringify({ experience: 'bench', event: 'purchase' }),
    rate,
    seconds,
  });
  if (load.failed > 0) throw new Error(`latency load: ${load.failed} of ${load.sent} requests failed`);
  await waitForCount(receiverUrl, load.ok, `${what} latency at ${rate}/s`);
  const arrivals = new Map(await get<[string, number][]>(`${receiverUrl}/arrivals`));
  const created = await storage.db.selectFrom('notifications').select(['id', 'created_at']).where('created_at', '>=', startedAt).execute();
  const latencies = created.flatMap((row) => (arrivals.has(row.id) ? [arrivals.get(row.id)! - Number(row.created_at)] : [])).sort((a, b) => a - b);
  return { p50: percentile(latencies, 50), p99: percentile(latencies, 99), latencies, rate: (created.length / seconds).toFixed(0) };
}

interface Backend {
  name: 'sqlite' | 'postgres';
  env: Record<string, string>;
  open(dataDir: string): Storage;
  cleanup(): Promise<void>;
}

async function postgresBackend(url: string): Promise<Backend> {
  const schema = await createPgSchema(url);
  return { name: 'postgres', env: { DATABASE_URL: schema.databaseUrl }, open: () => schema.open(), cleanup: () => schema.drop() };
}

const sqliteBackend: Backend = {
  name: 'sqlite',
  env: {},
  open: (dataDir) => openStorage(`sqlite:${join(dataDir, 'rewards.db')}`),
  cleanup: async () => {},
};

/** An account with a client, an unlimited experience (`bench`) and a subscription per event (registered-request alone unless told) to the receiver's /hook. */
export async function setUpTenant(service: Awaited<ReturnType<typeof startRewards>>, receiverUrl: string, events = ['registered-request']) {
  const admin = await token(service.url, service.operator.client_id, service.operator.client_secret, 'admin');
  const account = await call<Created>(service.url, 'POST', '/v2/admin/accounts', admin, { name: `bench-${randomBytes(3).toString('hex')}` });
  const client = await call<ClientCredentials>(service.url, 'POST', `/v2/admin/accounts/${account.id}/clients`, admin, {});
  await call(service.url, 'POST', `/v2/admin/experiences?accountId=${account.id}`, admin, {
    name: 'bench',
    title: 'Benchmark',
    prizes: [{ id: 'cpn', bucket: 'coupons', title: '10 off', value: 10, kind: 'coupon' }],
  });
  const bearer = await token(service.url, client.client_id, client.client_secret, client.scopes);
  const [subscription] = await Promise.all(events.map((event) => call<Subscription>(service.url, 'POST', '/v2/subscriptions', bearer, { event, callback: { url: `${receiverUrl}/hook` } })));
  return { accountId: account.id, bearer, subscriptionId: subscription!._id, callbackUrl: `${receiverUrl}/hook` };
}

async function benchBackend(backend: Backend, receiver: Child, options: BenchOptions, count: number): Promise<BenchRow[]> {
  const service = await startRewards({ ...backend.env, LOG_LEVEL: 'warn' });
  const storage = backend.open(service.dataDir);
  try {
    const tenant = await setUpTenant(service, receiver.url);

    // (a) throughput, after the same warm-up the baseline had (JIT, keep-alive connections).
    await reset(receiver.url);
    await preloadNotifications(storage, tenant, WARMUP, 'warm');
    await waitForCount(receiver.url, WARMUP, `${backend.name} warm-up`);
    await waitForEmptyQueue(storage);
    // The baseline right before, so both see the same machine (it is shared and noisy).
    await waitForQuietMachine({ postgresUrl: options.postgresUrl });
    const baseline = await plainPostLoop(receiver.url, count);
    await reset(receiver.url);
    await preloadNotifications(storage, tenant, count);
    const delivered = await waitForCount(receiver.url, count, `${backend.name} throughput`);
    const throughput = perSecond(delivered);
    const baselineRate = perSecond(baseline.stats);

    // (b) latency at a steady rate: every request produces one registered-requests notification.
    const seconds = options.quick ? 2 : 10;
    await waitForQuietMachine({ postgresUrl: options.postgresUrl });
    const atRate = await latencyPhase(service.url, receiver.url, storage, tenant.bearer, RATE, seconds, backend.name);
    // The same at a rate far below the throughput: shows the floor without queueing.
    const light = await latencyPhase(service.url, receiver.url, storage, tenant.bearer, LIGHT_RATE, options.quick ? 2 : 5, backend.name);
    const { p50, p99, latencies, rate } = atRate;

    const baselineText = `undici Agent POST loop (${PER_HOST} connections) ${fmt(baselineRate)} req/s`;
    return [
      {
        entry: `delivery throughput [${backend.name}]`,
        figure: `${fmt(throughput)} notifications/s (${fmt(count)} preloaded)`,
        baseline: baselineText,
        ratio: throughput / baselineRate,
        goal: '≥ 0.50',
        met: throughput / baselineRate >= 0.5,
      },
      {
        entry: `delivery latency p50, registration → receiver [${backend.name}]`,
        figure: `${ms(p50)} (${latencies.length} notifications at ${rate}/s)`,
        baseline: `goal 5 ms; plain POST round trip p50 ${ms(baseline.p50)}`,
        ratio: p50 / 5,
        goal: '≤ 5 ms',
        met: p50 <= 5,
      },
      {
        entry: `delivery latency p99, registration → receiver [${backend.name}]`,
        figure: `${ms(p99)} (max ${ms(latencies.at(-1) ?? NaN)})`,
        baseline: `goal 50 ms; plain POST round trip p99 ${ms(baseline.p99)}`,
        ratio: p99 / 50,
        goal: '≤ 50 ms',
        met: p99 <= 50,
      },
      {
        entry: `delivery latency at ${LIGHT_RATE}/s, registration → receiver [${backend.name}]`,
        figure: `p50 ${ms(light.p50)}, p99 ${ms(light.p99)} (${light.latencies.length} notifications)`,
        baseline: `plain POST round trip p50 ${ms(baseline.p50)}, p99 ${ms(baseline.p99)}`,
        ratio: light.p50 / 5,
      },
    ];
  } finally {
    await storage.close();
    await service.stop();
    await backend.cleanup();
  }
}

export async function benchDelivery(options: BenchOptions): Promise<BenchRow[]> {
  const count = options.quick ? 2000 : 20_000;
  const receiver = await startProcess(['--import', 'tsx', join(ROOT_DIR, 'bench/servers/receiver.ts')], {}, '/stats', await freePort());
  try {
    // Warm the receiver and the baseline loop (JIT, keep-alive sockets).
    await plainPostLoop(receiver.url, WARMUP);
    const rows = await benchBackend(sqliteBackend, receiver, options, count);
    if (options.postgresUrl) rows.push(...(await benchBackend(await postgresBackend(options.postgresUrl), receiver, options, count)));
    return rows;
  } finally {
    await receiver.stop();
  }
}
