import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Circuit } from '../src/domain/notifications/circuit-breaker.js';
import { openStorage, type Storage } from '../src/storage/database.js';
import { saveCircuit } from '../src/storage/repositories/endpoint-circuits.js';
import { insertNotifications } from '../src/storage/repositories/notifications.js';
import { DEFAULT_CONCURRENCY_LIMITS } from '../src/worker/outbound/concurrency-limiter.js';
import { benchNotificationRow, call, createPgSchema, fmt, receiverStats, type Subscription } from './cluster.js';
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
 * - The recovery of an endpoint with 100,000 held notifications (`heldDrain`): account A's endpoint
 *   E1 (on 127.0.0.2, an address of its own as another host would be; it answers 204 at once) has
 *   100,000 notifications its circuit breaker holds, written straight into the database with its
 *   circuit open and the next probe far off. A's other endpoint E2 and B's endpoint get steady
 *   streams (STREAM_RATE/s each); their latency, p50 and p99, is measured first with nothing
 *   draining, then with the probe due now: it gets an answer, the circuit closes and the 100,000
 *   drain, RELEASE_WINDOW at a time, while the same streams run. Goal ≤ 2 × each. Also the drain
 *   rate, and how many were left when the window ended (BENCH_DRAIN_ALL=1 waits for the last one
 *   and gives the time the 100,000 took).
 * SQLite, and PostgreSQL when BENCH_POSTGRES_URL is set.
 */

const HANGING = 9;
const B_RATE = 50;
const A_BURST = 60;
const A_RATE = 20;
/** The held-drain measurement: held notifications, and the rate of each stream (A's E2, B). */
const HELD = 100_000;
const STREAM_RATE = 50;
/** The drain rate the circuit-breaker entry's goal asks for: 12,000 notifications within 2 minutes. */
const REQUIRED_DRAIN_RATE = 100;

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
  return { p50: percentile(latencies, 50), p99, count: latencies.length, tailSplit: await tailSplit(storage, created, arrivals, p99) };
}

/** Where the slowest 1 % (at or over `p99`) spent it: before their (last) attempt started (queue, claim, loading), or after (call slots, the call); the longest of each. */
async function tailSplit(storage: Storage, created: Array<{ id: string; created_at: number }>, arrivals: Map<string, number>, p99: number) {
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
  return { toStart: Math.max(...split.map((x) => x.toStart)), toArrival: Math.max(...split.map((x) => x.toArrival)) };
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

interface Stream {
  accountId: string;
  bearer: string;
  /** The endpoint whose notifications are timed. */
  url: string;
}

interface Latency {
  p50: number;
  p99: number;
  count: number;
  /** Sorted. */
  latencies: number[];
  tailSplit: { toStart: number; toArrival: number };
}

/** Each stream's requests at STREAM_RATE/s for `seconds`, all at once; per stream its latencies, registration → arrival. */
async function measureStreams(service: Child, receiverUrl: string, storage: Storage, streams: readonly [Stream, Stream], seconds: number): Promise<[Latency, Latency]> {
  await reset(receiverUrl);
  const since = Date.now();
  const loads = await Promise.all(
    streams.map((stream) =>
      pacedLoad({
        url: `${service.url}/v2/requests`,
        method: 'POST',
        headers: { authorization: `Bearer ${stream.bearer}`, 'content-type': 'application/json' },
        body: JSON.stringify({ experience: 'bench', event: 'purchase' }),
        rate: STREAM_RATE,
        seconds,
        connections: 16,
      }),
    ),
  );
  const ok = loads.reduce((sum, load) => sum + load.ok, 0);
  if (loads.some((load) => load.failed > 0)) throw new Error(`streams: ${loads.map((load) => load.failed).join(', ')} requests failed`);
  const deadline = Date.now() + 120_000;
  let arrivals = new Map<string, number>();
  while (Date.now() < deadline) {
    arrivals = new Map(await get<[string, number][]>(`${receiverUrl}/arrivals`));
    if (arrivals.size >= ok) break;
    await sleep(100);
  }
  const measure = async (stream: Stream, i: number): Promise<Latency> => {
    const created = await storage.db
      .selectFrom('notifications')
      .select(['id', 'created_at'])
      .where('account_id', '=', stream.accountId)
      .where('url', '=', stream.url)
      .where('created_at', '>=', since)
      .execute();
    const latencies = created.flatMap((row) => (arrivals.has(row.id) ? [arrivals.get(row.id)! - Number(row.created_at)] : [])).sort((x, y) => x - y);
    if (latencies.length < loads[i]!.ok) throw new Error(`stream ${i}: ${latencies.length} of ${loads[i]!.ok} notifications arrived within two minutes`);
    const p99 = percentile(latencies, 99);
    return { p50: percentile(latencies, 50), p99, count: latencies.length, latencies, tailSplit: await tailSplit(storage, created, arrivals, p99) };
  };
  return [await measure(streams[0], 0), await measure(streams[1], 1)];
}

/**
 * Account A's endpoint E1 recovers with HELD notifications held; A's other endpoint E2 and B's
 * endpoint, with steady streams, against the same streams just before with nothing draining.
 */
async function heldDrain(name: 'sqlite' | 'postgres', env: Record<string, string>, open: (dataDir: string) => Storage, options: BenchOptions): Promise<BenchRow[]> {
  const held = options.quick ? HELD / 5 : HELD;
  const seconds = options.quick ? 5 : 30;
  const drainAll = process.env.BENCH_DRAIN_ALL === '1';
  const e1Port = await freePort();
  const e1 = await startProcess(['--import', 'tsx', join(ROOT_DIR, 'bench/servers/receiver.ts')], { RECEIVER_ALSO_ON: '127.0.0.2' }, '/stats', e1Port);
  const receiver = await startProcess(['--import', 'tsx', join(ROOT_DIR, 'bench/servers/receiver.ts')], {}, '/stats', await freePort());
  const service = await startRewards({ ...env, LOG_LEVEL: 'error' });
  const storage = open(service.dataDir);
  try {
    // A: E2 (its requests' notifications) and E1 (only experience `held`, which no request names: it gets only what is held).
    const a = await setUpTenant(service, `${receiver.url}/a`);
    const e1Url = `http://127.0.0.2:${e1Port}/hook`;
    const e1Subscription = await call<Subscription>(service.url, 'POST', '/v2/subscriptions', a.bearer, { event: 'registered-request', experiences: ['held'], callback: { url: e1Url } });
    const b = await setUpTenant(service, `${receiver.url}/b`);
    const streams: [Stream, Stream] = [
      { accountId: a.accountId, bearer: a.bearer, url: a.callbackUrl },
      { accountId: b.accountId, bearer: b.bearer, url: b.callbackUrl },
    ];

    // The held notifications (made over the last 10 minutes, oldest first), and E1's circuit open with its next probe far off.
    const endpoint = { accountId: a.accountId, url: e1Url };
    const now = Date.now();
    const tenant = { accountId: a.accountId, subscriptionId: e1Subscription._id, callbackUrl: e1Url };
    const rows = Array.from({ length: held }, (_, i) => {
      const at = now - 600_000 + Math.floor((i * 600_000) / held);
      return { ...benchNotificationRow(tenant, 'held', i, at), run_at: null, held_at: at };
    });
    const circuit: Circuit = {
      state: 'open',
      failures: 5,
      reason: 'no answer (bench: seeded)',
      openedAt: now - 600_000,
      closedAt: null,
      nextProbeAt: now + 86_400_000,
      probeIntervalMs: 60_000,
      probeId: null,
      probeUntil: null,
      probes: 10,
    };
    await storage.db.transaction().execute(async (tx) => {
      await insertNotifications(tx, rows);
      await saveCircuit(tx, endpoint, circuit, now);
    });
    const left = async () =>
      Number(
        (
          await storage.db
            .selectFrom('notifications')
            .select((eb) => eb.fn.countAll<string>().as('n'))
            .where('account_id', '=', a.accountId)
            .where('url', '=', e1Url)
            .where('status', '=', 'pending')
            .executeTakeFirstOrThrow()
        ).n,
      );

    // Nothing draining: the baseline (after a short warm-up of the same path).
    await measureStreams(service, receiver.url, storage, streams, 1);
    await waitForQuietMachine({ postgresUrl: options.postgresUrl });
    const [e2Alone, bAlone] = await measureStreams(service, receiver.url, storage, streams, seconds);

    // The probe is due now: it gets an answer, the circuit closes, and the held notifications drain while the streams run.
    await waitForQuietMachine({ postgresUrl: options.postgresUrl });
    const drainFrom = Date.now();
    await saveCircuit(storage.db, endpoint, { ...circuit, nextProbeAt: drainFrom - 1 }, drainFrom);
    const [e2During, bDuring] = await measureStreams(service, receiver.url, storage, streams, seconds);
    const windowMs = Date.now() - drainFrom;
    const leftAfterWindow = await left();
    let drainedIn: number | undefined;
    if (drainAll || leftAfterWindow === 0) {
      let remaining = leftAfterWindow;
      const until = Date.now() + 1_800_000;
      while (remaining > 0 && Date.now() < until) {
        await sleep(500);
        remaining = await left();
      }
      if (remaining === 0) drainedIn = (await receiverStats(e1.url)).last - drainFrom;
    }
    // Every call E1 got and the notifications they were for, in one step (the drain may still go on): a repeated call shows as more calls than notifications.
    const e1Took = await get<{ count: number; arrivals: [string, number][] }>(`${e1.url}/take`);
    const e1Calls = e1Took.count;
    const e1Repeated = e1Took.count - e1Took.arrivals.length;
    const deliveredInWindow = held - leftAfterWindow;
    const rate = deliveredInWindow / (windowMs / 1000);

    const ms = (n: number) => `${n.toFixed(n < 10 ? 2 : 1)} ms`;
    const draining = `E1 (A, 127.0.0.2) draining ${fmt(held)} held`;
    const latencyRow = (who: string, p: 'p50' | 'p99', during: Latency, alone: Latency): BenchRow => ({
      entry: `noisy neighbour: ${who}'s ${p} while ${draining}, registration → receiver [${name}]`,
      figure:
        p === 'p50'
          ? `${ms(during.p50)} (${during.count} notifications at ${STREAM_RATE}/s)`
          : `${ms(during.p99)} (${during.latencies.filter((x) => x > 2 * alone.p99).length} of ${during.count} over 2 × the baseline's p99; slowest 1 %: ≤ ${ms(during.tailSplit.toStart)} from commit to the attempt's start, ≤ ${ms(during.tailSplit.toArrival)} from there to arrival)`,
      baseline: `nothing draining, same run: ${p} ${ms(alone[p])} (${alone.count})`,
      ratio: during[p] / alone[p],
      goal: '≤ 2.00',
      met: during[p] / alone[p] <= 2,
    });
    return [
      latencyRow("A's other endpoint E2", 'p50', e2During, e2Alone),
      latencyRow("A's other endpoint E2", 'p99', e2During, e2Alone),
      latencyRow('B', 'p50', bDuring, bAlone),
      latencyRow('B', 'p99', bDuring, bAlone),
      {
        entry: `noisy neighbour: drain rate of ${fmt(held)} held notifications, E1 answering 204 at once, beside the two streams [${name}]`,
        figure:
          `${fmt(rate)}/s (${fmt(deliveredInWindow)} delivered in the ${(windowMs / 1000).toFixed(0)} s window, ${fmt(leftAfterWindow)} left` +
          `${drainedIn !== undefined ? `; all ${fmt(held)} in ${(drainedIn / 1000).toFixed(1)} s` : `; at this rate all ${fmt(held)} in ~${fmt(held / rate)} s`}` +
          `; E1 got ${fmt(e1Calls)} calls, ${e1Repeated} of them repeats)`,
        baseline: `${REQUIRED_DRAIN_RATE}/s: what the circuit-breaker goal asks (12,000 held delivered within 2 minutes)`,
        ratio: rate / REQUIRED_DRAIN_RATE,
        goal: '≥ 1.00',
        met: rate >= REQUIRED_DRAIN_RATE,
      },
    ];
  } finally {
    await storage.close();
    await service.stop();
    await receiver.stop();
    await e1.stop();
  }
}

export async function benchNoisyNeighbour(options: BenchOptions): Promise<BenchRow[]> {
  const openSqlite = (dataDir: string) => openStorage(`sqlite:${join(dataDir, 'rewards.db')}`);
  const rows = await benchBackend('sqlite', {}, openSqlite, options);
  rows.push(...(await heldDrain('sqlite', {}, openSqlite, options)));
  if (options.postgresUrl) {
    for (const part of [benchBackend, heldDrain]) {
      const schema = await createPgSchema(options.postgresUrl);
      try {
        rows.push(...(await part('postgres', { DATABASE_URL: schema.databaseUrl }, () => schema.open(), options)));
      } finally {
        await schema.drop();
      }
    }
  }
  return rows;
}
