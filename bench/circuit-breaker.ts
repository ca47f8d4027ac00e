import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { DEFAULT_CIRCUIT_SETTINGS, saysDown } from '../src/domain/notifications/circuit-breaker.js';
import { openStorage, type Storage } from '../src/storage/database.js';
import { call, createPgSchema, fmt } from './cluster.js';
import { setUpTenant } from './delivery.js';
import { pacedLoad, startRewards, waitForQuietMachine, type BenchOptions, type BenchRow } from './lib.js';

/**
 * Entry `circuit-breaker`: the endpoint circuit breaker's goal, measured (docs/delivery.md,
 * "Circuit breaker"). A receiver is down 10 minutes while 20 notifications a second are made for
 * it; it gets all of them within 2 minutes of coming back, each exactly once per attempt logged,
 * with at most one probe call per probe interval during the outage, against the failing calls
 * the same outage costs without the breaker (CIRCUIT_BREAKER_FAILURES=0), measured in the same run.
 *
 * - Time scale k (BENCH_CIRCUIT_SCALE; 20 by default, 60 with --quick, 1 is the real thing): the
 *   outage lasts 600/k s, CIRCUIT_BREAKER_PROBE_INTERVAL is 10/k s and
 *   CIRCUIT_BREAKER_PROBE_MAX_INTERVAL 60/k s, the deadline 120/k s after coming back. The rate
 *   stays 20/s real: 12,000/k notifications, and the drain rate the deadline asks for (100/s) is
 *   the same as at k=1. The service's own fixed periods (its upkeep every 250 ms, its view of the
 *   open circuits refreshed every second) are not scaled: they weigh more the larger k is.
 * - The outage (BENCH_CIRCUIT_OUTAGE): `refuse` (the default, the common outage) closes the
 *   receiver's listening socket and its connections, then listens again on the same port; the
 *   failing calls then never reach it, so they are counted from the attempt log (attempts with no
 *   answer). `503` keeps it listening and answering 503: the receiver counts every call itself.
 * - The notifications: POST /v2/requests at 20/s, open loop, for the whole outage, each one
 *   `registered-requests` notification to the receiver; sending stops when it comes back (the
 *   claim is about the outage's notifications).
 * - RETRY_INTERVAL is the contract's 3 h: what failed an attempt (the opening run and failed
 *   probes) waits for its next one and is reported, not delivered in the window.
 * SQLite, and PostgreSQL when BENCH_POSTGRES_URL is set; each mode on a fresh database.
 */

const RATE = 20;
const REAL = { outageS: 600, probeS: DEFAULT_CIRCUIT_SETTINGS.probeIntervalMs / 1000, probeMaxS: DEFAULT_CIRCUIT_SETTINGS.probeMaxIntervalMs / 1000, deadlineS: 120 };
const FAILURES = DEFAULT_CIRCUIT_SETTINGS.failures;
const HOUR = 3_600_000;

type OutageMode = 'refuse' | '503';

interface Scale {
  k: number;
  outageMs: number;
  probeMs: number;
  probeMaxMs: number;
  deadlineMs: number;
}

function scaleOf(options: BenchOptions): Scale {
  const k = Number(process.env.BENCH_CIRCUIT_SCALE ?? (options.quick ? 60 : 20));
  if (!(k >= 1)) throw new Error(`BENCH_CIRCUIT_SCALE must be a number ≥ 1, not ${process.env.BENCH_CIRCUIT_SCALE}`);
  return {
    k,
    outageMs: (REAL.outageS * 1000) / k,
    probeMs: Math.round((REAL.probeS * 1000) / k),
    probeMaxMs: Math.round((REAL.probeMaxS * 1000) / k),
    deadlineMs: (REAL.deadlineS * 1000) / k,
  };
}

interface Call {
  at: number;
  id: string;
  status: number;
}

/** A receiver in this process that answers 204 at once, records every call, and goes down (refusing, or answering 503) and back up. */
async function startOutageReceiver(mode: OutageMode) {
  const calls: Call[] = [];
  let down = false;
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      const status = down ? 503 : 204;
      calls.push({ at: Date.now(), id: String(request.headers['webhook-id'] ?? ''), status });
      response.writeHead(status).end();
    });
  });
  server.keepAliveTimeout = 30_000;
  const listen = (port: number) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
  await listen(0);
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    async goDown() {
      if (mode === '503') {
        down = true;
        return;
      }
      // Nothing listens on the port: every connection is refused.
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
    async comeBack() {
      if (mode === '503') down = false;
      else await listen(port);
    },
    async close() {
      if (!server.listening) return;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}

interface Backend {
  name: 'sqlite' | 'postgres';
  /** A fresh database for one service: its env, how this process opens it, and its cleanup. */
  fresh(): Promise<{ env: Record<string, string>; open(dataDir: string): Storage; cleanup(): Promise<void> }>;
}

const sqlite: Backend = {
  name: 'sqlite',
  fresh: async () => ({ env: {}, open: (dataDir) => openStorage(`sqlite:${join(dataDir, 'rewards.db')}`), cleanup: async () => {} }),
};

const postgres = (url: string): Backend => ({
  name: 'postgres',
  fresh: async () => {
    const schema = await createPgSchema(url);
    return { env: { DATABASE_URL: schema.databaseUrl }, open: () => schema.open(), cleanup: () => schema.drop() };
  },
});

/** Most of `times` (sorted) within any `windowMs`. */
function busiestWindow(times: number[], windowMs: number): number {
  let most = 0;
  for (let i = 0, j = 0; i < times.length; i++) {
    while (times[i]! - times[j]! >= windowMs) j++;
    most = Math.max(most, i - j + 1);
  }
  return most;
}

interface StatsBody {
  circuit: { state: string; failures: number; lastFailure: string | null; openedAt: string | null; nextProbeAt: string | null; probes: number; held: number };
}

interface Outage {
  /** When the receiver went down and came back (epoch ms). */
  downAt: number;
  backAt: number;
  made: number;
  /** The failing calls during the outage, their start times, sorted. */
  failing: number[];
  /** When the circuit opened (epoch ms), from its row; null if it never did. */
  openedAt: number | null;
  /** Failing attempts that started before it opened (the attempt log): the opening run. */
  openingRun: number;
  circuitAtEnd: StatsBody['circuit'];
  heldAtEnd: number;
}

/** One mode (breaker on or off) on a fresh database and service: the outage, then (breaker on) the recovery. */
async function runMode(backend: Backend, breaker: boolean, scale: Scale, mode: OutageMode, options: BenchOptions) {
  const db = await backend.fresh();
  const service = await startRewards({
    ...db.env,
    CIRCUIT_BREAKER_FAILURES: breaker ? String(FAILURES) : '0',
    CIRCUIT_BREAKER_PROBE_INTERVAL: `${scale.probeMs}ms`,
    CIRCUIT_BREAKER_PROBE_MAX_INTERVAL: `${scale.probeMaxMs}ms`,
    RETRY_INTERVAL: '3h',
    LOG_LEVEL: 'warn',
  });
  const storage = db.open(service.dataDir);
  const receiver = await startOutageReceiver(mode);
  try {
    const tenant = await setUpTenant(service, receiver.url);
    const send = (seconds: number) =>
      pacedLoad({
        url: `${service.url}/v2/requests`,
        method: 'POST',
        headers: { authorization: `Bearer ${tenant.bearer}`, 'content-type': 'application/json' },
        body: JSON.stringify({ experience: 'bench', event: 'purchase' }),
        rate: RATE,
        seconds,
        connections: 8,
      });
    /** Notifications of the outage not yet attempted: held by the breaker, or pending with no attempt (due, or in flight). */
    const unattempted = async (from: number, to: number) =>
      Number(
        (
          await storage.db
            .selectFrom('notifications')
            .select((eb) => eb.fn.countAll<string>().as('n'))
            .where('account_id', '=', tenant.accountId)
            .where('created_at', '>=', from)
            .where('created_at', '<=', to)
            .where((eb) => eb.or([eb('held_at', 'is not', null), eb.and([eb('status', '=', 'pending'), eb('attempt_count', '=', 0)])]))
            .executeTakeFirstOrThrow()
        ).n,
      );

    // Warm-up with the receiver up: the path is hot and the endpoint healthy.
    const warm = await send(1);
    const warmUntil = Date.now() + 30_000;
    while (receiver.calls.filter((c) => c.status < 300).length < warm.ok && Date.now() < warmUntil) await sleep(50);
    await waitForQuietMachine({ postgresUrl: options.postgresUrl });

    // The outage: down, 20 notifications/s for its length, back up.
    const downAt = Date.now();
    await receiver.goDown();
    // When the circuit opened, from its row (watched until then).
    const circuit = { openedAt: null as number | null, watching: true };
    const watcher = (async () => {
      while (circuit.watching && breaker && circuit.openedAt === null) {
        const row = await storage.db.selectFrom('endpoint_circuits').select(['state', 'opened_at']).where('account_id', '=', tenant.accountId).where('url', '=', tenant.callbackUrl).executeTakeFirst();
        if (row?.state === 'open' && row.opened_at !== null) circuit.openedAt = Number(row.opened_at);
        else await sleep(50);
      }
    })();
    const load = await send(scale.outageMs / 1000);
    if (load.failed > 0) throw new Error(`circuit-breaker: ${load.failed} of ${load.sent} requests failed`);
    const stats = await call<StatsBody>(service.url, 'GET', `/v2/subscriptions/${tenant.subscriptionId}/stats`, tenant.bearer);
    const backAt = Date.now();
    await receiver.comeBack();
    circuit.watching = false;
    await watcher;
    const { openedAt } = circuit;
    const heldAtEnd = stats.circuit.held;

    // Every notification of the outage has had its first attempt or is held (the breaker) or delivered: nothing in flight.
    const settledBy = Date.now() + (breaker ? 5 * scale.deadlineMs + 30_000 : 30_000);
    let waiting = 0;
    for (;;) {
      waiting = await unattempted(downAt, backAt);
      if (waiting === 0 || Date.now() > settledBy) break;
      await sleep(100);
    }

    const rows = (await storage.db.selectFrom('notifications').select(['id', 'status', 'attempt_count', 'run_at', 'created_at']).where('account_id', '=', tenant.accountId).execute()).map((row) => ({
      id: row.id,
      status: row.status,
      attempts: Number(row.attempt_count),
      runAt: row.run_at === null ? null : Number(row.run_at),
      createdAt: Number(row.created_at),
    }));
    const attempts = (await storage.db.selectFrom('notification_attempts').select(['notification_id', 'started_at', 'status_code']).where('url', '=', tenant.callbackUrl).execute()).map((a) => ({
      id: a.notification_id,
      startedAt: Number(a.started_at),
      answered: a.status_code !== null,
      /** No answer or a 5xx: what the breaker counts. */
      failed: saysDown(a.status_code),
    }));

    const outageRows = rows.filter((row) => row.createdAt >= downAt && row.createdAt <= backAt);
    // The failing calls: refused ones never reach the receiver, so the attempt log counts them; 503s the receiver counts.
    const failing = (
      mode === 'refuse'
        ? attempts.filter((a) => !a.answered && a.startedAt >= downAt && a.startedAt <= backAt).map((a) => a.startedAt)
        : receiver.calls.filter((c) => c.status === 503).map((c) => c.at)
    ).sort((x, y) => x - y);
    const openingRun = attempts.filter((a) => a.failed && a.startedAt >= downAt && (openedAt === null || a.startedAt < openedAt)).length;
    const outage: Outage = { downAt, backAt, made: outageRows.length, failing, openedAt, openingRun, circuitAtEnd: stats.circuit, heldAtEnd };

    if (process.env.BENCH_CIRCUIT_TRACE === '1') {
      // The outage's timeline, ms from going down: when the circuit opened, each failing attempt (started) and each call received.
      const at = (t: number) => `+${t - downAt}`;
      process.stderr.write(`  [${backend.name}, breaker ${breaker ? 'on' : 'off'}] opened ${openedAt === null ? '—' : at(openedAt)}, back ${at(backAt)}\n`);
      for (const a of attempts.filter((x) => x.failed && x.startedAt >= downAt).sort((x, y) => x.startedAt - y.startedAt)) process.stderr.write(`    attempt ${at(a.startedAt)} ${a.id}\n`);
      for (const c of receiver.calls.filter((x) => x.at >= downAt && x.status >= 500)) process.stderr.write(`    call    ${at(c.at)} ${c.id} ${c.status}\n`);
    }

    // Calls per webhook-id against attempts logged (refused calls never arrive: only answered attempts are compared then).
    const callsById = new Map<string, number>();
    for (const c of receiver.calls) callsById.set(c.id, (callsById.get(c.id) ?? 0) + 1);
    const loggedById = new Map<string, number>();
    for (const a of attempts) if (mode === '503' || a.answered) loggedById.set(a.id, (loggedById.get(a.id) ?? 0) + 1);
    const mismatched = rows.filter((row) => (callsById.get(row.id) ?? 0) !== (loggedById.get(row.id) ?? 0));
    const known = new Set(rows.map((row) => row.id));
    const strays = [...callsById.keys()].filter((id) => !known.has(id)).length;

    const onSchedule = outageRows.filter((row) => row.status === 'pending' && row.attempts > 0 && row.runAt !== null && row.runAt > backAt + HOUR);
    const delivered = outageRows.filter((row) => row.status === 'succeeded');
    const firstAnswer = new Map<string, number>();
    for (const c of receiver.calls) if (c.status < 300 && !firstAnswer.has(c.id)) firstAnswer.set(c.id, c.at);
    const arrivals = delivered.map((row) => firstAnswer.get(row.id) ?? NaN).sort((x, y) => x - y);
    const afterBack = receiver.calls.filter((c) => c.status < 300 && c.at >= backAt);
    // The first answer after coming back is the probe that closes the circuit; the next call is the first released one.
    const firstReleased = afterBack.find((c) => c.id !== afterBack[0]?.id);
    return {
      outage,
      delivered: delivered.length,
      onSchedule,
      left: waiting,
      lastDelivered: arrivals.at(-1) ?? NaN,
      firstAnswerAfterBack: afterBack[0]?.at ?? NaN,
      firstReleased: firstReleased?.at ?? NaN,
      mismatched: mismatched.length + strays,
      compared: rows.length,
      calls: [...callsById.values()].reduce((sum, n) => sum + n, 0),
      logged: [...loggedById.values()].reduce((sum, n) => sum + n, 0),
      attemptsFailedBeforeOpening: openedAt === null ? 0 : onSchedule.filter((row) => attempts.some((a) => a.id === row.id && a.failed && a.startedAt < openedAt)).length,
    };
  } finally {
    await receiver.close();
    await storage.close();
    await service.stop();
    await db.cleanup();
  }
}

async function benchBackend(backend: Backend, scale: Scale, mode: OutageMode, options: BenchOptions): Promise<BenchRow[]> {
  const s = (ms: number) => `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  const off = await runMode(backend, false, scale, mode, options);
  const on = await runMode(backend, true, scale, mode, options);
  const outageS = (on.outage.backAt - on.outage.downAt) / 1000;
  const name = `circuit breaker, time ÷${scale.k} (${s(scale.outageMs)} outage = 10 min ÷ ${scale.k}, receiver ${mode === 'refuse' ? 'refusing connections' : 'answering 503'})`;
  const db = backend.name;

  const openedAt = on.outage.openedAt;
  // The opening run is told by the attempt log (attempts started before the opening); the failing calls after it are probes.
  const opening = on.outage.failing.slice(0, on.outage.openingRun);
  const probes = on.outage.failing.slice(on.outage.openingRun);
  const probeGaps = probes.slice(1).map((t, i) => t - probes[i]!);
  const mostPerInterval = busiestWindow(probes, scale.probeMs);
  const source = mode === 'refuse' ? 'refused calls, from the attempt log' : 'calls the receiver answered 503';

  const recoveryMs = on.lastDelivered - on.outage.backAt;
  const drainMs = on.lastDelivered - on.firstAnswerAfterBack;
  const heldDelivered = on.delivered;
  const all = on.left === 0 && heldDelivered + on.onSchedule.length === on.outage.made;
  return [
    {
      entry: `${name}: failing calls during the outage [${db}]`,
      figure: `${fmt(on.outage.failing.length)} (${opening.length} opening run + ${probes.length} probes; ${fmt(on.outage.made)} notifications made at ${RATE}/s over ${outageS.toFixed(1)} s; ${source}; the stats API at the end: ${on.outage.circuitAtEnd.state}, ${on.outage.circuitAtEnd.probes} failed probes, ${fmt(on.outage.circuitAtEnd.held)} held)`,
      baseline: `without the breaker (CIRCUIT_BREAKER_FAILURES=0), same run: ${fmt(off.outage.failing.length)} failing calls (${fmt(off.outage.made)} made; at k=1: ~${fmt(RATE * REAL.outageS)})`,
      ratio: on.outage.failing.length / off.outage.failing.length,
    },
    {
      entry: `${name}: most probe calls in one probe interval (${s(scale.probeMs)}) after the opening [${db}]`,
      figure: `${mostPerInterval} (${probes.length} probes, gaps ${probeGaps.length ? `${s(Math.min(...probeGaps))}–${s(Math.max(...probeGaps))}` : '—'}; probe interval ${s(scale.probeMs)} doubling to ${s(scale.probeMaxMs)})`,
      baseline: `goal ≤ 1; without the breaker: ${busiestWindow(off.outage.failing, scale.probeMs)} failing calls in the busiest ${s(scale.probeMs)}`,
      ratio: mostPerInterval,
      goal: '≤ 1',
      met: mostPerInterval <= 1 && openedAt !== null,
    },
    {
      entry: `${name}: recovery, coming back → all held delivered [${db}]`,
      figure: all
        ? `${s(recoveryMs)} for ${fmt(heldDelivered)} (held ${fmt(on.outage.heldAtEnd)} at the end of the outage; after coming back: the next probe answered at ${s(on.firstAnswerAfterBack - on.outage.backAt)}, the first released at ${s(on.firstReleased - on.outage.backAt)}, the last at ${s(recoveryMs)}: ${fmt(heldDelivered / Math.max(drainMs / 1000, 0.001))}/s from the probe's answer)`
        : `NOT ALL: ${fmt(heldDelivered)} delivered, ${fmt(on.left)} still held or unsent after ${s(Date.now() - on.outage.backAt)}`,
      baseline: `deadline ${s(scale.deadlineMs)} (2 min ÷ ${scale.k}: ${fmt((RATE * REAL.outageS) / REAL.deadlineS)} notifications/s whatever k); without the breaker none is delivered: all ${fmt(off.onSchedule.length)} wait 3 h`,
      ratio: all ? recoveryMs / scale.deadlineMs : NaN,
      goal: '≤ 1.00 (within the deadline)',
      met: all && recoveryMs <= scale.deadlineMs,
    },
    {
      entry: `${name}: calls per webhook-id vs attempts logged [${db}]`,
      figure: `${on.mismatched} notifications differ of ${fmt(on.compared)} (${fmt(on.calls)} calls received, ${fmt(on.logged)} ${mode === 'refuse' ? 'answered ' : ''}attempts logged)`,
      baseline: `without the breaker: ${off.mismatched} differ of ${fmt(off.compared)}`,
      ratio: on.logged === 0 ? NaN : on.calls / on.logged,
      goal: 'equal for every notification',
      met: on.mismatched === 0 && off.mismatched === 0,
      required: true,
    },
    {
      entry: `${name}: notifications that failed an attempt, on the 3 h schedule [${db}]`,
      figure: `${fmt(on.onSchedule.length)} (${on.attemptsFailedBeforeOpening} before the opening, ${on.onSchedule.length - on.attemptsFailedBeforeOpening} failed probes): not delivered in the window, the contract's RETRY_INTERVAL`,
      baseline: `${fmt(on.outage.made)} made during the outage; without the breaker ${fmt(off.onSchedule.length)} of ${fmt(off.outage.made)}`,
      ratio: on.onSchedule.length / on.outage.made,
    },
  ];
}

export async function benchCircuitBreaker(options: BenchOptions): Promise<BenchRow[]> {
  const scale = scaleOf(options);
  const mode = (process.env.BENCH_CIRCUIT_OUTAGE ?? 'refuse') as OutageMode;
  if (mode !== 'refuse' && mode !== '503') throw new Error(`BENCH_CIRCUIT_OUTAGE: refuse or 503, not ${String(mode)}`);
  process.stderr.write(
    `  circuit-breaker: time ÷${scale.k}: outage ${scale.outageMs / 1000} s, probe ${scale.probeMs} ms doubling to ${scale.probeMaxMs} ms, deadline ${scale.deadlineMs / 1000} s; ${RATE} notifications/s; receiver ${mode === 'refuse' ? 'refusing connections' : 'answering 503'}\n`,
  );
  const rows = await benchBackend(sqlite, scale, mode, options);
  if (options.postgresUrl) rows.push(...(await benchBackend(postgres(options.postgresUrl), scale, mode, options)));
  return rows;
}
