import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { openStorage, type Storage } from '../src/storage/database.js';
import { DEFAULT_CONCURRENCY_LIMITS } from '../src/worker/outbound/concurrency-limiter.js';
import { call, createPgSchema } from './cluster.js';
import { percentile, reset, setUpTenant } from './delivery.js';
import { freePort, pacedLoad, ROOT_DIR, startProcess, startRewards, waitForQuietMachine, type BenchOptions, type BenchRow, type Child } from './lib.js';

/**
 * Entry `noisy-neighbour`: fair delivery between accounts (docs/delivery.md, "Fair delivery").
 * Account A subscribes nine endpoints, each on an address of its own (127.0.0.2 … 127.0.0.10),
 * that accept calls and never answer (CALLBACK_TIMEOUT=2s), and floods them: a burst of requests,
 * then a steady stream, nine deliveries each. Account B sends requests at a steady rate to a
 * receiver that answers at once.
 * - B's latency (registration → receiver, as the delivery entry times it) during A's flood, p50 and
 *   p99, against B's own latency with A idle, measured just before in the same run. Goal ≤ 2 ×.
 * - A alone: how many of its calls were in flight at once at its receivers, against the shared
 *   call slots (DEFAULT_CONCURRENCY_LIMITS.overall). Goal: all of them (the fairness costs an
 *   account alone nothing).
 * SQLite, and PostgreSQL when BENCH_POSTGRES_URL is set.
 */

const HANGING = 9;
const B_RATE = 50;
const A_BURST = 60;
const A_RATE = 20;

/** Receivers that take calls and never answer; counts the calls open at once. */
async function startHangingReceivers(): Promise<{ urls: string[]; inFlight(): number; close(): Promise<void> }> {
  let open = 0;
  const servers: Server[] = [];
  for (let i = 0; i < HANGING; i++) {
    const server = createServer((request, response) => {
      open += 1;
      request.resume();
      response.on('close', () => (open -= 1));
    });
    await new Promise<void>((resolve) => server.listen(0, `127.0.0.${i + 2}`, resolve));
    servers.push(server);
  }
  return {
    urls: servers.map((server) => {
      const { address, port } = server.address() as AddressInfo;
      return `http://${address}:${port}/hook`;
    }),
    inFlight: () => open,
    async close() {
      for (const server of servers) {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
    },
  };
}

const get = async <T>(url: string): Promise<T> => (await fetch(url)).json() as Promise<T>;

/** B's requests at B_RATE/s for `seconds`; its latencies, registration → arrival. */
async function measureB(service: Child, receiverUrl: string, storage: Storage, b: { accountId: string; bearer: string }, seconds: number) {
  await reset(receiverUrl);
  const since = Date.now();
  const load = await pacedLoad({
    url: `${service.url}/v2/requests`,
    method: 'POST',
    headers: { authorization: `Bearer ${b.bearer}`, 'content-type': 'application/json' },
    body: JSON.stringify({ experience: 'bench', event: 'purchase' }),
    rate: B_RATE,
    seconds,
    connections: 16,
  });
  if (load.failed > 0) throw new Error(`B's load: ${load.failed} of ${load.sent} requests failed`);
  const deadline = Date.now() + 60_000;
  let arrivals = new Map<string, number>();
  while (Date.now() < deadline) {
    arrivals = new Map(await get<[string, number][]>(`${receiverUrl}/arrivals`));
    if (arrivals.size >= load.ok) break;
    await sleep(50);
  }
  const created = await storage.db.selectFrom('notifications').select(['id', 'created_at']).where('account_id', '=', b.accountId).where('created_at', '>=', since).execute();
  const latencies = created.flatMap((row) => (arrivals.has(row.id) ? [arrivals.get(row.id)! - Number(row.created_at)] : [])).sort((x, y) => x - y);
  if (latencies.length < load.ok) throw new Error(`B: ${latencies.length} of ${load.ok} notifications arrived within a minute`);
  const p99 = percentile(latencies, 99);
  // Where the slowest 1 % spent it: before their (last) attempt started (queue, claim, loading), or after (call slots, the call).
  const tail = created.filter((row) => arrivals.has(row.id) && arrivals.get(row.id)! - Number(row.created_at) >= p99);
  const started = new Map(
    (
      await storage.db
        .selectFrom('notification_attempts')
        .select(['notification_id', 'started_at'])
        .where(
          'notification_id',
          'in',
          tail.map((row) => row.id),
        )
        .execute()
    ).map((a) => [a.notification_id, Number(a.started_at)]),
  );
  const split = tail.map((row) => ({ toStart: (started.get(row.id) ?? NaN) - Number(row.created_at), toArrival: arrivals.get(row.id)! - (started.get(row.id) ?? NaN) }));
  const tailSplit = { toStart: Math.max(...split.map((x) => x.toStart)), toArrival: Math.max(...split.map((x) => x.toArrival)) };
  return { p50: percentile(latencies, 50), p99, count: latencies.length, tailSplit };
}

async function benchBackend(name: 'sqlite' | 'postgres', env: Record<string, string>, open: (dataDir: string) => Storage, options: BenchOptions): Promise<BenchRow[]> {
  const seconds = options.quick ? 3 : 10;
  const hanging = await startHangingReceivers();
  const receiver = await startProcess(['--import', 'tsx', join(ROOT_DIR, 'bench/servers/receiver.ts')], {}, '/stats', await freePort());
  const service = await startRewards({ ...env, CALLBACK_TIMEOUT: '2s', LOG_LEVEL: 'error' });
  const storage = open(service.dataDir);
  try {
    const a = await setUpTenant(service, hanging.urls[0]!.replace(/\/hook$/, ''));
    for (const url of hanging.urls.slice(1)) await call(service.url, 'POST', '/v2/subscriptions', a.bearer, { event: 'registered-request', callback: { url } });
    const b = await setUpTenant(service, receiver.url);

    // B alone: the baseline (after a short warm-up of the same path).
    await measureB(service, receiver.url, storage, b, 1);
    await waitForQuietMachine({ postgresUrl: options.postgresUrl });
    const alone = await measureB(service, receiver.url, storage, b, seconds);

    // A floods: a burst, then a steady stream for as long as B is measured.
    const flood = (rate: number, duration: number) =>
      pacedLoad({
        url: `${service.url}/v2/requests`,
        method: 'POST',
        headers: { authorization: `Bearer ${a.bearer}`, 'content-type': 'application/json' },
        body: JSON.stringify({ experience: 'bench', event: 'purchase' }),
        rate,
        seconds: duration,
        connections: 16,
      });
    await flood(A_BURST * 10, 0.1);
    let peak = 0;
    const sampler = setInterval(() => (peak = Math.max(peak, hanging.inFlight())), 20);
    const until = Date.now() + 10_000;
    while (hanging.inFlight() < DEFAULT_CONCURRENCY_LIMITS.overall && Date.now() < until) await sleep(20);
    // A alone, its calls hanging: how many of the shared slots it holds.
    await sleep(1000);
    const aloneInFlight = peak;
    const [, during] = await Promise.all([flood(A_RATE, seconds + 2), measureB(service, receiver.url, storage, b, seconds)]);
    clearInterval(sampler);

    const shared = DEFAULT_CONCURRENCY_LIMITS.overall;
    const ms = (n: number) => `${n.toFixed(n < 10 ? 2 : 1)} ms`;
    const floodText = `A: ${A_BURST} requests then ${A_RATE}/s × ${HANGING} endpoints that never answer (CALLBACK_TIMEOUT=2s), ${peak} calls hanging at most`;
    return [
      {
        entry: `noisy neighbour: B's p50 during A's flood, registration → receiver [${name}]`,
        figure: `${ms(during.p50)} (${during.count} notifications at ${B_RATE}/s; ${floodText})`,
        baseline: `B alone, same run: p50 ${ms(alone.p50)} (${alone.count})`,
        ratio: during.p50 / alone.p50,
        goal: '≤ 2.00',
        met: during.p50 / alone.p50 <= 2,
      },
      {
        entry: `noisy neighbour: B's p99 during A's flood [${name}]`,
        figure: `${ms(during.p99)} (slowest 1 %: ≤ ${ms(during.tailSplit.toStart)} from commit to the attempt's start, ≤ ${ms(during.tailSplit.toArrival)} from there to arrival)`,
        baseline: `B alone, same run: p99 ${ms(alone.p99)}`,
        ratio: during.p99 / alone.p99,
        goal: '≤ 2.00',
        met: during.p99 / alone.p99 <= 2,
      },
      {
        entry: `noisy neighbour: A alone, its calls in flight [${name}]`,
        figure: `${aloneInFlight} calls hanging at once`,
        baseline: `${shared} shared call slots`,
        ratio: aloneInFlight / shared,
        goal: '≥ 1.00 (every shared slot)',
        met: aloneInFlight >= shared,
      },
    ];
  } finally {
    await storage.close();
    await service.stop();
    await receiver.stop();
    await hanging.close();
  }
}

export async function benchNoisyNeighbour(options: BenchOptions): Promise<BenchRow[]> {
  const rows = await benchBackend('sqlite', {}, (dataDir) => openStorage(`sqlite:${join(dataDir, 'rewards.db')}`), options);
  if (options.postgresUrl) {
    const schema = await createPgSchema(options.postgresUrl);
    try {
      rows.push(...(await benchBackend('postgres', { DATABASE_URL: schema.databaseUrl }, () => schema.open(), options)));
    } finally {
      await schema.drop();
    }
  }
  return rows;
}
