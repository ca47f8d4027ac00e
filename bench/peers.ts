import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import type { Storage } from '../src/storage/database.js';
import { insertNotifications } from '../src/storage/repositories/notifications.js';
import { DELIVERIES } from '../src/storage/deliveries.js';
import { notifyOtherProcesses } from '../src/storage/queue/index.js';
import { benchNotificationRow, createPgSchema, preloadNotifications, unfinishedWork } from './cluster.js';
import { percentile, perSecond, plainPostLoop, reset, setUpTenant, waitForCount, type Stats } from './delivery.js';
import { freePort, ROOT_DIR, startProcess, startRewards, waitForQuietMachine, type BenchOptions, type BenchRow, type Child } from './lib.js';
import { PEER_SETTINGS, type PeerJob } from './peers/worker.js';

/**
 * Entry `peers`: this service on PostgreSQL beside the queues a team would otherwise build on,
 * graphile-worker 0.18 and pg-boss 12, each at its documented best settings (PEER_SETTINGS), doing
 * the same unit of work: one durable job per notification, a Standard-Webhooks-signed POST through
 * 8 keep-alive connections to the same receiver process, then completion. The service does its
 * full bookkeeping (notification state, attempt log, endpoint-health rollup).
 *
 * - **Same hygiene**: every system starts every round on a new schema (no dead tuples, empty tables).
 * - **Same clock**: latency runs from the moment the transaction that enqueued the job has committed
 *   (the bench's own transaction, one per job, timed when COMMIT returns) to the arrival at the
 *   receiver. For the service that transaction writes the notification and its delivery job and
 *   NOTIFYs, as the registration transaction does.
 * - **Throughput**: 20,000 jobs committed at once into a running worker, measured at the receiver
 *   from first to last arrival, after 500 jobs of warm-up; the plain undici POST loop (8
 *   connections) of the same round is the baseline.
 * - **Cost per delivered notification** over the throughput phase (enqueue, delivery and
 *   completion, until nothing is left to finish): statements (pg_stat_statements `calls`, when the
 *   extension is loaded: scripts/postgres-setup.sh does it), CPU time of every postgres process
 *   (/proc) and WAL bytes (pg_current_wal_lsn).
 * Needs Node.js ≥ 22 (graphile-worker 0.18) and BENCH_POSTGRES_URL; three rounds (one with --quick),
 * systems interleaved within each round; min / median / max over the rounds.
 */

const WARMUP = 500;
const RATE = 1000;
const LIGHT_RATE = 100;
const SERVICE = 'this service';
type SystemName = 'graphile-worker' | 'graphile-worker+log' | 'pg-boss' | typeof SERVICE;

interface System {
  name: SystemName;
  /** Enqueues `count` jobs in one transaction. */
  enqueueMany(count: number, tag: string): Promise<void>;
  /** Enqueues one job in its own transaction; resolves with its webhook-id once COMMIT has returned. */
  enqueueOne(tag: string, n: number): Promise<string>;
  /** Jobs not finished yet (delivered but not completed included). */
  unfinished(): Promise<number>;
  /** The worker process (its CPU time is measured). */
  workerPid: number;
  stop(): Promise<void>;
}

interface Costs {
  statements: number | undefined;
  /** CPU time of the worker process, ms per notification. */
  workerCpuMs: number;
  cpuMs: number;
  walBytes: number;
}

interface RoundResult {
  throughput: number;
  baseline: number;
  p50: number;
  p99: number;
  lightP50: number;
  lightP99: number;
  /** Single-job enqueues per second achieved in the 1,000/s phase (open loop: below 1,000 when enqueuing cannot keep up). */
  enqueued: number;
  costs: Costs;
}

const job = (tag: string, n: number): PeerJob => ({ id: `msg_${tag}_${n}`, body: JSON.stringify({ id: `req_${tag}_${n}`, rewardValue: 10 }) });

async function admin<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** CPU time of every postgres process now (ms); backends that exited in between are lost, so phases keep their pools open. */
function postgresCpuMs(): number {
  let total = 0;
  for (const entry of readdirSync('/proc')) if (/^\d+$/.test(entry)) total += processCpuMs(Number(entry), 'postgres');
  return total;
}

/** CPU time (user + system) of process `pid` so far, in ms; 0 if it is gone or not named `name`. */
function processCpuMs(pid: number, name?: string): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    if (name !== undefined && stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) !== name) return 0;
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime, stime in USER_HZ (100 on Linux)
  } catch {
    return 0; // exited meanwhile
  }
}

async function costSnapshot(client: pg.Client, workerPid: number): Promise<{ statements: number | undefined; cpuMs: number; workerCpuMs: number; lsn: string }> {
  const statements = await client
    .query<{ n: string }>('select coalesce(sum(calls), 0) as n from pg_stat_statements where dbid = (select oid from pg_database where datname = current_database())')
    .then((r) => Number(r.rows[0]!.n))
    .catch(() => undefined);
  const lsn = (await client.query<{ lsn: string }>('select pg_current_wal_lsn() as lsn')).rows[0]!.lsn;
  return { statements, cpuMs: postgresCpuMs(), workerCpuMs: processCpuMs(workerPid), lsn };
}

async function costSince(client: pg.Client, before: Awaited<ReturnType<typeof costSnapshot>>, count: number, workerPid: number): Promise<Costs> {
  const after = await costSnapshot(client, workerPid);
  const wal = Number((await client.query<{ bytes: string }>('select pg_wal_lsn_diff($1, $2) as bytes', [after.lsn, before.lsn])).rows[0]!.bytes);
  return {
    // The snapshot's own statement is counted once; take it out.
    statements: before.statements === undefined || after.statements === undefined ? undefined : (after.statements - before.statements - 1) / count,
    cpuMs: (after.cpuMs - before.cpuMs) / count,
    workerCpuMs: (after.workerCpuMs - before.workerCpuMs) / count,
    walBytes: wal / count,
  };
}

async function startPeerWorker(peer: SystemName, url: string, schema: string, receiverUrl: string, secret: string): Promise<Child> {
  return startProcess(
    ['--import', 'tsx', join(ROOT_DIR, 'bench/peers/worker.ts')],
    { PEER: peer, DATABASE_URL: url, PEER_SCHEMA: schema, RECEIVER_URL: receiverUrl, SIGNING_SECRET: secret },
    '/ready',
    await freePort(),
  );
}

const SECRET = `whsec_${randomBytes(32).toString('base64')}`;

async function graphileWorker(url: string, receiverUrl: string, withLog: boolean): Promise<System> {
  const { makeWorkerUtils } = await import('graphile-worker');
  const { schema, drop } = await createPgSchema(url);
  const utils = await makeWorkerUtils({ connectionString: url, schema });
  await utils.migrate();
  const pool = new pg.Pool({ connectionString: url, max: 8 });
  if (withLog)
    await pool.query(
      `create table ${schema}.attempts (id bigserial primary key, job_id bigint not null, webhook_id text not null, status_code int not null, latency_ms int not null, at timestamptz not null)`,
    );
  const worker = await startPeerWorker(withLog ? 'graphile-worker+log' : 'graphile-worker', url, schema, receiverUrl, SECRET);
  return {
    name: withLog ? 'graphile-worker+log' : 'graphile-worker',
    workerPid: worker.process.pid!,
    async enqueueMany(count, tag) {
      await utils.addJobs(Array.from({ length: count }, (_, n) => ({ identifier: 'deliver', payload: job(tag, n) })));
    },
    async enqueueOne(tag, n) {
      const spec = job(tag, n);
      await pool.query(`select ${schema}.add_job('deliver', $1::json)`, [JSON.stringify(spec)]);
      return spec.id;
    },
    async unfinished() {
      return Number((await pool.query<{ n: string }>(`select count(*) as n from ${schema}._private_jobs`)).rows[0]!.n);
    },
    async stop() {
      await worker.stop();
      await utils.release();
      await pool.end();
      await drop();
    },
  };
}

async function pgBoss(url: string, receiverUrl: string): Promise<System> {
  const { PgBoss } = await import('pg-boss');
  const { schema, drop } = await createPgSchema(url);
  // The enqueuing side: a pool that does not give up while single sends queue up at 1,000/s.
  const boss = new PgBoss({ connectionString: url, schema, max: 16, connectionTimeoutMillis: 60_000, supervise: false, schedule: false });
  boss.on('error', (error: Error) => process.stderr.write(`pg-boss (bench): ${error.message}\n`));
  await boss.start();
  await boss.createQueue('deliver', { notify: true });
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  const worker = await startPeerWorker('pg-boss', url, schema, receiverUrl, SECRET);
  return {
    name: 'pg-boss',
    workerPid: worker.process.pid!,
    async enqueueMany(count, tag) {
      await boss.insert(
        'deliver',
        Array.from({ length: count }, (_, n) => ({ data: job(tag, n) })),
      );
    },
    async enqueueOne(tag, n) {
      const spec = job(tag, n);
      await boss.send('deliver', spec);
      return spec.id;
    },
    async unfinished() {
      return Number((await pool.query<{ n: string }>(`select count(*) as n from ${schema}.job where state < 'completed'`)).rows[0]!.n);
    },
    async stop() {
      await worker.stop();
      await boss.stop({ graceful: false });
      await pool.end();
      await drop();
    },
  };
}

async function service(url: string, receiverUrl: string): Promise<System> {
  const schema = await createPgSchema(url);
  const rewards = await startRewards({ DATABASE_URL: schema.databaseUrl, LOG_LEVEL: 'warn' });
  const storage: Storage = schema.open(8);
  const tenant = await setUpTenant(rewards, receiverUrl);
  return {
    name: SERVICE,
    workerPid: rewards.process.pid!,
    async enqueueMany(count, tag) {
      await preloadNotifications(storage, tenant, count, tag);
    },
    async enqueueOne(tag, n) {
      const row = benchNotificationRow(tenant, tag, n, Date.now());
      await storage.db.transaction().execute(async (tx) => {
        await insertNotifications(tx, [row]);
        await notifyOtherProcesses(tx, [DELIVERIES]);
      });
      return row.id;
    },
    async unfinished() {
      return unfinishedWork(storage);
    },
    async stop() {
      await storage.close();
      await rewards.stop();
      await schema.drop();
    },
  };
}

async function waitUntilFinished(system: System, deadlineMs = 120_000): Promise<void> {
  const until = Date.now() + deadlineMs;
  while ((await system.unfinished()) > 0) {
    if (Date.now() > until) throw new Error(`${system.name}: jobs left unfinished`);
    await sleep(25);
  }
}

/** Open loop: one job per tick at `rate`/s for `seconds`, each in its own transaction; latency = arrival − commit. */
async function latencyAtRate(system: System, receiverUrl: string, rate: number, seconds: number, tag: string): Promise<{ p50: number; p99: number; enqueued: number }> {
  await reset(receiverUrl);
  const committed = new Map<string, number>();
  const total = rate * seconds;
  const started = performance.now();
  const pending: Promise<void>[] = [];
  for (let n = 0; n < total; n++) {
    const due = started + (n * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 1) await sleep(wait);
    pending.push(system.enqueueOne(tag, n).then((id) => void committed.set(id, performance.timeOrigin + performance.now())));
  }
  await Promise.all(pending);
  const enqueued = total / ((performance.now() - started) / 1000);
  await waitForCount(receiverUrl, total, `${system.name} at ${rate}/s`);
  const arrivals = new Map((await (await fetch(`${receiverUrl}/arrivals`)).json()) as [string, number][]);
  const latencies = [...committed].map(([id, at]) => arrivals.get(id)! - at).sort((a, b) => a - b);
  return { p50: percentile(latencies, 50), p99: percentile(latencies, 99), enqueued };
}

async function round(system: System, receiverUrl: string, postgresUrl: string, count: number, seconds: number, index: number): Promise<RoundResult> {
  await reset(receiverUrl);
  await system.enqueueMany(WARMUP, `warm${index}`);
  await waitForCount(receiverUrl, WARMUP, `${system.name} warm-up`);
  await waitUntilFinished(system);
  await waitForQuietMachine({ postgresUrl });
  const baseline = perSecond((await plainPostLoop(receiverUrl, count)).stats);
  await reset(receiverUrl);
  const costs = await admin(postgresUrl, async (client) => {
    const before = await costSnapshot(client, system.workerPid);
    await system.enqueueMany(count, `tp${index}`);
    const stats: Stats = await waitForCount(receiverUrl, count, `${system.name} throughput`);
    await waitUntilFinished(system);
    const result = await costSince(client, before, count, system.workerPid);
    return { ...result, throughput: perSecond(stats) };
  });
  await waitForQuietMachine({ postgresUrl });
  const atRate = await latencyAtRate(system, receiverUrl, RATE, seconds, `r${index}`);
  await waitUntilFinished(system);
  const light = await latencyAtRate(system, receiverUrl, LIGHT_RATE, Math.max(2, seconds / 2), `l${index}`);
  return { throughput: costs.throughput, baseline, p50: atRate.p50, p99: atRate.p99, lightP50: light.p50, lightP99: light.p99, enqueued: atRate.enqueued, costs };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)]!;
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const ms = (n: number) => `${n.toFixed(n < 10 ? 1 : 0)}`;
const spread = (values: number[], show: (n: number) => string) => `${show(Math.min(...values))} / ${show(median(values))} / ${show(Math.max(...values))}`;

/** One system's rounds: throughput and latencies as min / median / max, and the median cost per notification. */
function describe(list: RoundResult[], count: number): string {
  const costs = list.map((r) => r.costs);
  return (
    `${spread(
      list.map((r) => r.throughput),
      fmt,
    )} deliveries/s (min / median / max, ${fmt(count)} preloaded); ` +
    `at ${RATE}/s (enqueued at ${spread(
      list.map((r) => r.enqueued),
      fmt,
    )}/s) p50 ${spread(
      list.map((r) => r.p50),
      ms,
    )} ms, p99 ${spread(
      list.map((r) => r.p99),
      ms,
    )} ms; at ${LIGHT_RATE}/s p50 ${spread(
      list.map((r) => r.lightP50),
      ms,
    )} ms; ` +
    `${costs[0]!.statements === undefined ? 'statements n/a (no pg_stat_statements)' : `${median(costs.map((x) => x.statements!)).toFixed(2)} statements`}, ` +
    `${(median(costs.map((x) => x.cpuMs)) * 1000).toFixed(0)} µs postgres CPU, ${(median(costs.map((x) => x.workerCpuMs)) * 1000).toFixed(0)} µs worker CPU, ${fmt(median(costs.map((x) => x.walBytes)))} B WAL per notification`
  );
}

export async function benchPeers(options: BenchOptions): Promise<BenchRow[]> {
  const major = Number(process.versions.node.split('.')[0]);
  const skipped = (why: string): BenchRow[] => [{ entry: 'peers', figure: `skipped: ${why}`, baseline: '', ratio: NaN }];
  if (major < 22) return skipped(`graphile-worker 0.18 and pg-boss 12 need Node.js ≥ 22; run \`scripts/with-node.sh 22 npm run bench -- --only peers\``);
  if (!options.postgresUrl) return skipped('set BENCH_POSTGRES_URL');
  const postgresUrl = options.postgresUrl;
  const count = options.quick ? 2000 : 20_000;
  const seconds = options.quick ? 2 : 10;
  const rounds = options.quick ? 1 : 3;
  const receiver = await startProcess(['--import', 'tsx', join(ROOT_DIR, 'bench/servers/receiver.ts')], {}, '/stats', await freePort());
  const makers: Record<SystemName, () => Promise<System>> = {
    'graphile-worker': () => graphileWorker(postgresUrl, receiver.url, false),
    'graphile-worker+log': () => graphileWorker(postgresUrl, receiver.url, true),
    'pg-boss': () => pgBoss(postgresUrl, receiver.url),
    [SERVICE]: () => service(postgresUrl, receiver.url),
  };
  const results = new Map<SystemName, RoundResult[]>();
  try {
    await plainPostLoop(receiver.url, WARMUP);
    // BENCH_PEERS=name,… runs only those systems (while working on one; the ratio rows need the bare peers).
    const chosen = (process.env.BENCH_PEERS?.split(',') ?? Object.keys(makers)) as SystemName[];
    const unknown = chosen.filter((name) => !(name in makers));
    if (unknown.length > 0)
      throw new Error(
        `BENCH_PEERS: no system ${unknown.map((name) => `"${name}"`).join(', ')}; the systems are ${Object.keys(makers)
          .map((name) => `"${name}"`)
          .join(', ')}`,
      );
    for (let index = 0; index < rounds; index++) {
      for (const name of chosen) {
        process.stderr.write(`  peers round ${index + 1}/${rounds}: ${name}\n`);
        const system = await makers[name]();
        try {
          results.set(name, [...(results.get(name) ?? []), await round(system, receiver.url, postgresUrl, count, seconds, index)]);
        } finally {
          await system.stop();
        }
      }
    }
  } finally {
    await receiver.stop();
  }

  const rows: BenchRow[] = [];
  if (!results.has('graphile-worker') || !results.has('pg-boss') || !results.has(SERVICE)) {
    for (const [name, list] of results) rows.push({ entry: `peers: ${name} [postgres]`, figure: describe(list, count), baseline: '', ratio: NaN });
    return rows;
  }
  const bare = (['graphile-worker', 'pg-boss'] as const).map((name) => ({ name, median: median(results.get(name)!.map((r) => r.throughput)), p50: median(results.get(name)!.map((r) => r.p50)) }));
  const bestRate = bare.reduce((a, b) => (b.median > a.median ? b : a));
  const bestLatency = bare.reduce((a, b) => (b.p50 < a.p50 ? b : a));
  for (const [name, list] of results) {
    const throughput = list.map((r) => r.throughput);
    rows.push({
      entry: `peers: ${name} [postgres]`,
      figure: describe(list, count),
      baseline: name === SERVICE ? `best bare peer ${bestRate.name} ${fmt(bestRate.median)}/s` : PEER_SETTINGS[name]!,
      ratio: median(throughput) / bestRate.median,
    });
  }
  const ours = results.get(SERVICE)!;
  const undici = median(ours.map((r) => r.baseline));
  rows.push({
    entry: 'peers: service throughput vs the plain undici loop [postgres]',
    figure: `${fmt(median(ours.map((r) => r.throughput)))}/s`,
    baseline: `undici Agent POST loop (8 connections) ${fmt(undici)}/s, same rounds`,
    ratio: median(ours.map((r) => r.throughput)) / undici,
    goal: '≥ 0.60',
    met: median(ours.map((r) => r.throughput)) / undici >= 0.6,
  });
  rows.push({
    entry: `peers: service p50 at ${RATE}/s vs the best peer's [postgres]`,
    figure: `${ms(median(ours.map((r) => r.p50)))} ms (p99 ${ms(median(ours.map((r) => r.p99)))} ms)`,
    baseline: `${bestLatency.name} ${ms(bestLatency.p50)} ms`,
    ratio: median(ours.map((r) => r.p50)) / bestLatency.p50,
    goal: '≤ 1.00',
    met: median(ours.map((r) => r.p50)) <= bestLatency.p50,
  });
  return rows;
}
