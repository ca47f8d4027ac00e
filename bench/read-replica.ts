import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { Pool } from 'undici';
import { createPgSchema, fmt, startReceiver, type PgSchema } from './cluster.js';
import { percentile, setUpTenant } from './delivery.js';
import { pacedLoad, startRewards, waitForQuietMachine, type BenchOptions, type BenchRow, type Child } from './lib.js';

/**
 * Entry `read-replica`: what DATABASE_READ_URL takes off the primary under a console-like read
 * load (docs/deployment.md, "Reads from a replica"). Needs BENCH_POSTGRES_URL and a hot standby of
 * it in BENCH_POSTGRES_READ_URL (or TEST_POSTGRES_READ_URL; scripts/postgres-replica-setup.sh
 * starts one and prints its URL), both on this machine: their processes' CPU is read from /proc.
 *
 * Two `rewards serve` (API and worker in one process), each on a fresh schema with a receiver of
 * its own: the baseline without DATABASE_READ_URL, and one with it pointing at the replica. Both are
 * started and warmed up with the workload (unmeasured), then measured in turns, one at a time, the
 * other idle: rounds of A B B A (4 rounds of 15 s each; --quick: A B, 3 s each), after a CHECKPOINT
 * and a quiet machine each. The workload, the same for both:
 * - writes: reward requests open-loop at WRITE_RATE/s, each registered and processed, and a
 *   subscription to each (registered-request, processed-request) to the receiver on loopback: two
 *   deliveries per request;
 * - reads: USERS simulated console users, each every PERIOD_MS (spread evenly over the period,
 *   open loop: a slow answer does not delay the next poll) reading what the deliveries and overview
 *   pages read: the delivery log (`limit=50`, in turn unfiltered, by status, by subscription, by
 *   subscription and status), then the first notification of that page by its id (with its
 *   attempts), one subscription's stats (`window=24h`), and the requests list (`limit=50`): four
 *   reads per poll, as many in both variants (a check).
 * Measured over each window: CPU seconds of the primary's PostgreSQL (its postmaster and every child
 * of it; backends that exited meanwhile through the postmaster's reaped children's times) and of the
 * replica's, likewise; the same for the measured service's own connections only (their
 * application_name, sampled every second), which other sessions on the machine do not touch; table
 * and index scans of its schema on each server (pg_stat_user_tables), and the statements each
 * server ran (pg_stat_statements `calls`, whole database: other sessions count too); the read
 * latency at the client; the replica's lag as the service reports it (rewards_database_read_lag_seconds,
 * /metrics scraped every second in both variants so that both pay for the scrapes) and as the
 * primary sees it (pg_stat_replication.replay_lag, sampled likewise). The write side
 * must keep up alike: every request accepted, processed, and both its notifications delivered (a check).
 */

const WRITE_RATE = 50;
const USERS = 20;
const PERIOD_MS = 1500;
const READS_PER_POLL = 4;
const EVENTS = ['registered-request', 'processed-request'];
/** USER_HZ: the unit of /proc/<pid>/stat's times (100 on Linux). */
const TICKS_PER_SECOND = 100;

type Variant = 'without' | 'with';

interface Measurement {
  seconds: number;
  reads: number;
  readsFailed: number;
  latencies: number[];
  primaryCpu: number;
  replicaCpu: number;
  /** CPU of the measured service's own backends on each server. */
  ownPrimaryCpu: number;
  ownReplicaCpu: number;
  serviceCpu: number;
  primaryStatements: number | undefined;
  replicaStatements: number | undefined;
  primaryScans: number;
  replicaScans: number;
  maxLag: number | undefined;
  /** The primary's view of it: pg_stat_replication.replay_lag, seconds. */
  maxReplayLag: number | undefined;
  accepted: number;
  refused: number;
  /** Of the window's requests, processed by its end; notifications that arrived at the receiver during it. */
  processedInWindow: number;
  deliveredInWindow: number;
}

/** /proc/<pid>/stat from the state field on (index i is the man page's field i + 3), or undefined once the process is gone. */
function statFields(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** CPU seconds (user + system) of a process so far; with `reaped`, also those of its children it has waited for. */
function cpuSeconds(pid: number, reaped = false): number {
  const f = statFields(pid);
  if (!f) return 0;
  return (Number(f[11]) + Number(f[12]) + (reaped ? Number(f[13]) + Number(f[14]) : 0)) / TICKS_PER_SECOND;
}

/**
 * CPU seconds of a PostgreSQL server so far: its postmaster, its children that exited (the
 * postmaster reaps them: cutime, cstime) and those running. A backend alive at the first reading
 * and gone at the second moves from the last term to the second: a difference stays right.
 */
function serverCpuSeconds(postmaster: number): number {
  let total = cpuSeconds(postmaster, true);
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const f = statFields(Number(entry));
    if (f && Number(f[1]) === postmaster) total += (Number(f[11]) + Number(f[12])) / TICKS_PER_SECOND;
  }
  return total;
}

/** The postmaster of the server `client` is connected to: its backend's parent, when that server runs on this machine. */
async function postmasterOf(client: pg.Client): Promise<number | undefined> {
  const { rows } = await client.query<{ pid: number }>('select pg_backend_pid() as pid');
  const backend = statFields(rows[0]!.pid);
  return backend ? Number(backend[1]) : undefined;
}

const withParams = (url: string, params: Record<string, string>) => {
  const u = new URL(url);
  for (const [key, value] of Object.entries(params)) u.searchParams.set(key, value);
  return u.toString();
};

async function connect(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  await client.connect();
  return client;
}

/** Statements the server ran in this database so far (pg_stat_statements, wherever it is installed), or undefined without it. */
async function statementCount(client: pg.Client): Promise<number | undefined> {
  const { rows } = await client.query<{ schema: string }>("select n.nspname as schema from pg_extension e join pg_namespace n on n.oid = e.extnamespace where e.extname = 'pg_stat_statements'");
  if (!rows[0]) return undefined;
  return client
    .query<{ n: string }>(
      `select coalesce(sum(calls), 0) as n from ${client.escapeIdentifier(rows[0].schema)}.pg_stat_statements where dbid = (select oid from pg_database where datname = current_database())`,
    )
    .then((r) => Number(r.rows[0]!.n))
    .catch(() => undefined);
}

/** Sequential and index scans of the schema's tables on that server so far (as flushed: a busy backend reports at most a second late). */
const scanCount = async (client: pg.Client, schema: string) =>
  Number((await client.query<{ n: string }>('select coalesce(sum(coalesce(seq_scan, 0) + coalesce(idx_scan, 0)), 0) as n from pg_stat_user_tables where schemaname = $1', [schema])).rows[0]!.n);

/**
 * CPU of the backends named `applicationName` on a server, sampled: each backend's CPU at its last
 * sighting less its CPU at the start (0 for one born since). A backend that exits between two
 * samples loses at most a second of its time.
 */
function ownBackends(client: pg.Client, applicationName: string) {
  const first = new Map<number, number>();
  const last = new Map<number, number>();
  const sample = async (into: Map<number, number>) => {
    const { rows } = await client.query<{ pid: number }>('select pid from pg_stat_activity where application_name = $1', [applicationName]);
    for (const { pid } of rows) into.set(pid, cpuSeconds(pid));
  };
  return {
    start: () => sample(first),
    sample: () => sample(last),
    seconds: () => [...last].reduce((sum, [pid, cpu]) => sum + cpu - (first.get(pid) ?? 0), 0),
  };
}

interface Tenant {
  bearer: string;
  subscriptions: string[];
}

/** The console's polls: USERS users, each every PERIOD_MS, for `seconds`; open loop. */
async function consoleLoad(service: Child, tenant: Tenant, seconds: number, seedId: string) {
  const pool = new Pool(service.url, { connections: USERS, pipelining: 1, keepAliveTimeout: 10_000 });
  const headers = { authorization: `Bearer ${tenant.bearer}` };
  const latencies: number[] = [];
  let failed = 0;
  const read = async <T>(path: string): Promise<T | undefined> => {
    const started = performance.now();
    try {
      const response = await pool.request({ path, method: 'GET', headers });
      const text = await response.body.text();
      latencies.push(performance.now() - started);
      if (response.statusCode !== 200) {
        failed += 1;
        return undefined;
      }
      return JSON.parse(text) as T;
    } catch {
      latencies.push(performance.now() - started);
      failed += 1;
      return undefined;
    }
  };
  const [a, b] = tenant.subscriptions as [string, string];
  const filters = ['', '&status=succeeded', `&subscriptionId=${a}`, `&subscriptionId=${b}&status=pending`];
  const polls = Math.max(1, Math.floor((seconds * 1000) / PERIOD_MS));
  const lastSeen = Array.from({ length: USERS }, () => seedId);
  const poll = (user: number, n: number) =>
    Promise.all([
      (async () => {
        const page = await read<{ data: { id: string }[] }>(`/v2/notifications?limit=50${filters[(user + n) % filters.length]}`);
        if (page?.data[0]) lastSeen[user] = page.data[0].id;
        await read(`/v2/notifications/${lastSeen[user]}`);
      })(),
      read(`/v2/subscriptions/${tenant.subscriptions[(user + n) % 2]}/stats?window=24h`),
      read('/v2/requests?limit=50'),
    ]);
  const started = performance.now();
  const calls: Promise<unknown>[] = [];
  const users = Array.from({ length: USERS }, async (_, user) => {
    for (let n = 0; n < polls; n++) {
      const wait = started + (user * PERIOD_MS) / USERS + n * PERIOD_MS - performance.now();
      if (wait > 0) await sleep(wait);
      calls.push(poll(user, n));
    }
  });
  await Promise.all(users);
  await Promise.all(calls);
  await pool.close();
  return { issued: polls * USERS * READS_PER_POLL, answered: latencies.length - failed, failed, latencies };
}

const receiverCount = async (receiverUrl: string) => ((await (await fetch(`${receiverUrl}/stats`)).json()) as { count: number }).count;

interface Servers {
  primaryUrl: string;
  readUrl: string;
  primaryPostmaster: number;
  replicaPostmaster: number;
}

/** One service under test: its schema, process, receiver and tenant, and a connection to each server for the counts. */
interface Side {
  variant: Variant;
  schema: PgSchema;
  applicationName: string;
  service: Awaited<ReturnType<typeof startRewards>> | undefined;
  receiver: Child | undefined;
  tenant: Tenant;
  primary: pg.Client;
  replica: pg.Client;
  seedId: string;
}

/** The workload on one side, for `seconds`: writes at WRITE_RATE/s and the console's reads. */
async function workload(side: Side, seconds: number, latencies: number[] = []) {
  const service = side.service!;
  const [writes, reads] = await Promise.all([
    pacedLoad({
      url: `${service.url}/v2/requests`,
      method: 'POST',
      headers: { authorization: `Bearer ${side.tenant.bearer}`, 'content-type': 'application/json' },
      body: JSON.stringify({ experience: 'bench', event: 'purchase' }),
      rate: WRITE_RATE,
      seconds,
      connections: 16,
    }),
    consoleLoad(service, side.tenant, seconds, side.seedId).then((r) => {
      latencies.push(...r.latencies);
      return r;
    }),
  ]);
  return { writes, reads };
}

/** Waits (up to a minute) until no job and no notification of the side's schema is pending. */
async function drain(side: Side): Promise<void> {
  const until = Date.now() + 60_000;
  while (Date.now() < until) {
    const { rows } = await side.primary.query<{ n: string }>("select (select count(*) from jobs where state = 'pending') + (select count(*) from notifications where status = 'pending') as n");
    if (Number(rows[0]!.n) === 0) return;
    await sleep(200);
  }
}

async function setUpSide(variant: Variant, servers: Servers, warmupSeconds: number): Promise<Side> {
  const schema = await createPgSchema(servers.primaryUrl);
  const applicationName = `rewards_bench_rr_${randomBytes(3).toString('hex')}`;
  const side: Side = {
    variant,
    schema,
    applicationName,
    service: undefined,
    receiver: undefined,
    tenant: { bearer: '', subscriptions: [] },
    primary: await connect(schema.databaseUrl),
    replica: await connect(withParams(servers.readUrl, { options: `-c search_path=${schema.schema}` })),
    seedId: 'msg_none',
  };
  // The replica must have the schema before the service reads it there.
  for (let i = 0; ; i++) {
    if ((await side.replica.query('select 1 from pg_namespace where nspname = $1', [schema.schema])).rows.length > 0) break;
    if (i > 100) throw new Error(`read-replica: schema ${schema.schema} did not reach the replica within 10 s: is BENCH_POSTGRES_READ_URL a replica of BENCH_POSTGRES_URL?`);
    await sleep(100);
  }
  side.receiver = await startReceiver();
  const readUrl = withParams(servers.readUrl, { options: `-c search_path=${schema.schema}`, application_name: applicationName });
  side.service = await startRewards({
    DATABASE_URL: withParams(schema.databaseUrl, { application_name: applicationName }),
    LOG_LEVEL: 'warn',
    ...(variant === 'with' ? { DATABASE_READ_URL: readUrl } : {}),
  });
  const made = await setUpTenant(side.service, side.receiver.url, EVENTS);
  const subscriptions = (await side.primary.query<{ id: string }>('select id from subscriptions where account_id = $1 order by event', [made.accountId])).rows.map((r) => r.id);
  side.tenant = { bearer: made.bearer, subscriptions };
  // Warm-up: the same workload, unmeasured (JIT, pools, a delivery log to read).
  await workload(side, warmupSeconds);
  await drain(side);
  side.seedId = (await side.primary.query<{ id: string }>('select id from notifications order by id desc limit 1')).rows[0]?.id ?? 'msg_none';
  return side;
}

async function tearDown(side: Side): Promise<void> {
  if (side.service) {
    await side.service.stop();
    rmSync(side.service.dataDir, { recursive: true, force: true });
  }
  await side.receiver?.stop();
  await side.primary.end();
  await side.replica.end();
  await side.schema.drop();
}

/** One measured window of `seconds` on `side` (the other side idle), then its stragglers drained. */
async function measureWindow(side: Side, servers: Servers, seconds: number): Promise<Measurement> {
  const service = side.service!;
  const own = { primary: ownBackends(side.primary, side.applicationName), replica: ownBackends(side.replica, side.applicationName) };
  const deliveredBefore = await receiverCount(side.receiver!.url);
  const counts = async () => ({
    primaryStatements: await statementCount(side.primary),
    replicaStatements: await statementCount(side.replica),
    primaryScans: await scanCount(side.primary, side.schema.schema),
    replicaScans: await scanCount(side.replica, side.schema.schema),
  });
  const before = await counts();
  await own.primary.start();
  await own.replica.start();
  const cpu = () => ({ primary: serverCpuSeconds(servers.primaryPostmaster), replica: serverCpuSeconds(servers.replicaPostmaster), service: cpuSeconds(service.process.pid!) });
  const windowStart = Date.now();
  const cpuBefore = cpu();

  let maxLag: number | undefined;
  let maxReplayLag: number | undefined;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      await sleep(1000);
      const lag = /^rewards_database_read_lag_seconds ([0-9.e+-]+)$/m.exec(await (await fetch(`${service.url}/metrics`)).text());
      if (lag) maxLag = Math.max(maxLag ?? 0, Number(lag[1]));
      const replay = (await side.primary.query<{ s: number | null }>('select extract(epoch from max(replay_lag))::float8 as s from pg_stat_replication')).rows[0]?.s;
      if (replay !== null && replay !== undefined) maxReplayLag = Math.max(maxReplayLag ?? 0, replay);
      await own.primary.sample();
      await own.replica.sample();
    }
  })();
  const latencies: number[] = [];
  const { writes, reads } = await workload(side, seconds, latencies);
  const cpuAfter = cpu();
  const windowEnd = Date.now();
  sampling = false;
  await sampler;
  await own.primary.sample();
  await own.replica.sample();
  const deliveredInWindow = (await receiverCount(side.receiver!.url)) - deliveredBefore;
  const processedInWindow = Number(
    (await side.primary.query<{ n: string }>("select count(*) as n from requests where status = 'processed' and created_at between $1 and $2", [windowStart, windowEnd])).rows[0]!.n,
  );
  await drain(side);
  const after = await counts();
  const difference = (x: number | undefined, y: number | undefined) => (x === undefined || y === undefined ? undefined : x - y);
  const m: Measurement = {
    seconds,
    reads: reads.answered,
    readsFailed: reads.issued - reads.answered,
    latencies,
    primaryCpu: cpuAfter.primary - cpuBefore.primary,
    replicaCpu: cpuAfter.replica - cpuBefore.replica,
    ownPrimaryCpu: own.primary.seconds(),
    ownReplicaCpu: own.replica.seconds(),
    serviceCpu: cpuAfter.service - cpuBefore.service,
    primaryStatements: difference(after.primaryStatements, before.primaryStatements),
    replicaStatements: difference(after.replicaStatements, before.replicaStatements),
    primaryScans: after.primaryScans - before.primaryScans,
    replicaScans: after.replicaScans - before.replicaScans,
    maxLag,
    maxReplayLag,
    accepted: writes.ok,
    refused: writes.failed,
    processedInWindow,
    deliveredInWindow,
  };
  const sorted = [...latencies].sort((x, y) => x - y);
  process.stderr.write(
    `  ${side.variant.padEnd(7)} replica: ${fmt(m.reads)} reads (${m.readsFailed} failed), p50 ${percentile(sorted, 50).toFixed(1)} ms, p99 ${percentile(sorted, 99).toFixed(1)} ms; ` +
      `CPU s: primary ${m.primaryCpu.toFixed(2)} (the service's backends ${m.ownPrimaryCpu.toFixed(2)}), replica ${m.replicaCpu.toFixed(2)} (the service's backends ${m.ownReplicaCpu.toFixed(2)}), service ${m.serviceCpu.toFixed(2)}; ` +
      `schema scans: primary ${fmt(m.primaryScans)}, replica ${fmt(m.replicaScans)}; statements (whole database): primary ${m.primaryStatements ?? 'n/a'}, replica ${m.replicaStatements ?? 'n/a'}; ` +
      `lag max ${m.maxLag === undefined ? '—' : `${m.maxLag.toFixed(3)} s`} (replay_lag ${m.maxReplayLag === undefined ? '—' : `${(m.maxReplayLag * 1000).toFixed(1)} ms`}); ${m.accepted} requests accepted (${m.refused} refused), ${m.processedInWindow} processed and ${m.deliveredInWindow} notifications delivered in the window\n`,
  );
  return m;
}

const skipped = (why: string): BenchRow[] => [{ entry: 'read-replica: primary CPU per 1,000 console reads with DATABASE_READ_URL [postgres]', figure: `skipped: ${why}`, baseline: '—', ratio: NaN }];

/** The two servers, or why the entry cannot run. */
async function findServers(primaryUrl: string, readUrl: string): Promise<Servers | string> {
  let primary: pg.Client | undefined;
  let replica: pg.Client | undefined;
  try {
    primary = await connect(primaryUrl);
    try {
      replica = await connect(readUrl);
    } catch (error) {
      return `the replica at ${new URL(readUrl).host} does not answer (${(error as Error).message}): scripts/postgres-replica-setup.sh starts it`;
    }
    if (!(await replica.query<{ r: boolean }>('select pg_is_in_recovery() as r')).rows[0]!.r) return `${new URL(readUrl).host} is not a standby (pg_is_in_recovery() is false)`;
    const identifier = (client: pg.Client) =>
      client
        .query<{ id: string }>('select system_identifier::text as id from pg_control_system()')
        .then((r) => r.rows[0]!.id)
        .catch(() => undefined);
    const [a, b] = [await identifier(primary), await identifier(replica)];
    if (a !== undefined && b !== undefined && a !== b) return `${new URL(readUrl).host} is a standby of another cluster than BENCH_POSTGRES_URL's`;
    const [primaryPostmaster, replicaPostmaster] = [await postmasterOf(primary), await postmasterOf(replica)];
    if (primaryPostmaster === undefined || replicaPostmaster === undefined) return 'the primary and the replica must run on this machine (their CPU is read from /proc)';
    return { primaryUrl, readUrl, primaryPostmaster, replicaPostmaster };
  } finally {
    await primary?.end();
    await replica?.end();
  }
}

const sum = (ms: Measurement[], pick: (m: Measurement) => number) => ms.reduce((total, m) => total + pick(m), 0);

export async function benchReadReplica(options: BenchOptions): Promise<BenchRow[]> {
  const readUrl = process.env.BENCH_POSTGRES_READ_URL ?? process.env.TEST_POSTGRES_READ_URL;
  if (!options.postgresUrl) return skipped('set BENCH_POSTGRES_URL, and BENCH_POSTGRES_READ_URL to a hot standby of it');
  if (!readUrl) return skipped('set BENCH_POSTGRES_READ_URL (or TEST_POSTGRES_READ_URL) to a hot standby of BENCH_POSTGRES_URL: scripts/postgres-replica-setup.sh starts one and prints its URL');
  const servers = await findServers(options.postgresUrl, readUrl);
  if (typeof servers === 'string') return skipped(servers);

  const rounds = options.quick ? 1 : 4;
  const seconds = options.quick ? 3 : 15;
  const results: Record<Variant, Measurement[]> = { without: [], with: [] };
  const sides: Partial<Record<Variant, Side>> = {};
  const checks: Record<Variant, { unprocessed: number; undelivered: number }> = { without: { unprocessed: 0, undelivered: 0 }, with: { unprocessed: 0, undelivered: 0 } };
  try {
    for (const variant of ['without', 'with'] as const) sides[variant] = await setUpSide(variant, servers, options.quick ? 2 : 5);
    for (let round = 0; round < rounds; round++) {
      // A B, then B A: a machine that drifts during a round weighs on both alike.
      const order: Variant[] = round % 2 === 0 ? ['without', 'with'] : ['with', 'without'];
      for (const variant of order) {
        await waitForQuietMachine({ postgresUrl: options.postgresUrl, maxMs: 15_000 });
        results[variant].push(await measureWindow(sides[variant]!, servers, seconds));
      }
    }
    for (const variant of ['without', 'with'] as const) {
      const side = sides[variant]!;
      await drain(side);
      const count = async (where: string) => Number((await side.primary.query<{ n: string }>(`select count(*) as n from requests ${where}`)).rows[0]!.n);
      checks[variant] = { unprocessed: await count("where status <> 'processed'"), undelivered: EVENTS.length * (await count('')) - (await receiverCount(side.receiver!.url)) };
    }
  } finally {
    for (const side of Object.values(sides)) await tearDown(side);
  }

  const summary = (variant: Variant) => {
    const ms = results[variant];
    const reads = sum(ms, (m) => m.reads);
    const sorted = ms.flatMap((m) => m.latencies).sort((x, y) => x - y);
    const lags = ms.flatMap((m) => (m.maxLag === undefined ? [] : [m.maxLag]));
    const replayLags = ms.flatMap((m) => (m.maxReplayLag === undefined ? [] : [m.maxReplayLag]));
    const perThousand = (cpu: number) => (cpu / reads) * 1000;
    return {
      reads,
      readsFailed: sum(ms, (m) => m.readsFailed),
      perThousand: perThousand(sum(ms, (m) => m.primaryCpu)),
      ownPerThousand: perThousand(sum(ms, (m) => m.ownPrimaryCpu)),
      replicaPerThousand: perThousand(sum(ms, (m) => m.replicaCpu)),
      ownReplicaPerThousand: perThousand(sum(ms, (m) => m.ownReplicaCpu)),
      primaryCpu: sum(ms, (m) => m.primaryCpu),
      primaryScans: perThousand(sum(ms, (m) => m.primaryScans)),
      replicaScans: perThousand(sum(ms, (m) => m.replicaScans)),
      replicaStatements: ms.some((m) => m.replicaStatements === undefined) ? undefined : perThousand(sum(ms, (m) => m.replicaStatements!)),
      p50: percentile(sorted, 50),
      p99: percentile(sorted, 99),
      maxLag: lags.length > 0 ? Math.max(...lags) : undefined,
      maxReplayLag: replayLags.length > 0 ? Math.max(...replayLags) : undefined,
      accepted: sum(ms, (m) => m.accepted),
      refused: sum(ms, (m) => m.refused),
      processed: sum(ms, (m) => m.processedInWindow),
      delivered: sum(ms, (m) => m.deliveredInWindow),
      ...checks[variant],
    };
  };
  const a = summary('without');
  const b = summary('with');
  // Round by round (each window's reads are the same count): the spread the sum hides.
  const roundRatios = (pick: (m: Measurement) => number) => {
    const ratios = results.with.map((m, i) => pick(m) / pick(results.without[i]!)).sort((x, y) => x - y);
    return ratios.length > 1 ? `rounds ${ratios[0]!.toFixed(2)}–${ratios[ratios.length - 1]!.toFixed(2)}` : '';
  };
  const s = (n: number) => n.toFixed(2);
  const load = `${USERS} console users polling every ${PERIOD_MS / 1000} s, ${WRITE_RATE} requests/s; ${rounds} × ${seconds} s each${options.quick ? ', --quick' : ''}`;
  const cpuText = (x: typeof a) =>
    `${s(x.perThousand)} s (${s(x.primaryCpu)} s over ${fmt(x.reads)} reads; the service's own backends ${s(x.ownPerThousand)} s; the replica ${s(x.replicaPerThousand)} s, the service's backends there ${s(x.ownReplicaPerThousand)} s)`;
  const scanText = (x: typeof a) =>
    `${fmt(x.primaryScans)} (the replica ${fmt(x.replicaScans)}; statements the replica ran ${x.replicaStatements === undefined ? 'n/a, no pg_stat_statements' : fmt(x.replicaStatements)})`;
  const latencyText = (x: typeof a) => `p50 ${s(x.p50)} ms, p99 ${s(x.p99)} ms`;
  const writeText = (x: typeof a) =>
    `${fmt(x.accepted)} requests accepted (${x.refused} refused), ${fmt(x.processed)} processed and ${fmt(x.delivered)} notifications delivered within the windows, ${x.unprocessed} unprocessed and ${x.undelivered} undelivered after; ${fmt(x.reads)} reads (${x.readsFailed} failed)`;
  const ownSpread = roundRatios((m) => m.ownPrimaryCpu);
  const sameReads = a.reads === b.reads && a.readsFailed === 0 && b.readsFailed === 0;
  const keptUp = a.refused + b.refused + a.unprocessed + b.unprocessed + a.undelivered + b.undelivered === 0 && a.accepted === b.accepted;
  return [
    {
      entry: `read-replica: the primary's PostgreSQL CPU per 1,000 console reads, with DATABASE_READ_URL (${load}) [postgres]`,
      figure: `${cpuText(b)}${rounds > 1 ? `; ${roundRatios((m) => m.primaryCpu)}, the service's backends ${ownSpread}` : ''}`,
      baseline: `without: ${cpuText(a)}`,
      ratio: b.perThousand / a.perThousand,
    },
    {
      entry: "read-replica: scans of the service's tables on the primary per 1,000 console reads, with DATABASE_READ_URL [postgres]",
      figure: scanText(b),
      baseline: `without: ${scanText(a)}`,
      ratio: b.primaryScans / a.primaryScans,
    },
    {
      entry: 'read-replica: console read latency, with DATABASE_READ_URL [postgres]',
      figure: `${latencyText(b)} (replica lag seen: rewards_database_read_lag_seconds max ${b.maxLag === undefined ? 'n/a' : `${b.maxLag.toFixed(3)} s`}, the primary's replay_lag max ${b.maxReplayLag === undefined ? 'n/a' : `${(b.maxReplayLag * 1000).toFixed(1)} ms`})`,
      baseline: `without: ${latencyText(a)}`,
      ratio: b.p50 / a.p50,
    },
    {
      entry: 'read-replica: the write side and the reads, the same in both [postgres]',
      figure: `with: ${writeText(b)}`,
      baseline: `without: ${writeText(a)}`,
      ratio: b.delivered / a.delivered,
      goal: 'as many reads served, none failed; every request processed and notification delivered',
      met: sameReads && keptUp,
      required: true,
    },
  ];
}
