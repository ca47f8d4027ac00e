import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { PROCESS_REQUEST_JOB, REGISTER_REQUEST_JOB } from '../src/domain/requests/job-kinds.js';
import { openStorage, type Storage } from '../src/storage/database.js';
import { openSqliteDatabase } from '../src/storage/sqlite-driver.js';
import { migrateToLatest } from '../src/storage/migrations/index.js';
import { claimDeliveries, type Delivery } from '../src/storage/deliveries.js';
import { claimDueJobs } from '../src/storage/queue/index.js';
import type { Executor } from '../src/storage/database.js';
import {
  createPgSchema,
  fmt,
  preloadNotifications,
  receiverStats,
  resetReceiver,
  rssMiB,
  setUpTenant,
  startReceiver,
  startWorkerProcess,
  waitForReceiverCount,
  type PgSchema,
  type Tenant,
} from './cluster.js';
import { startRewards, type BenchOptions, type BenchRow, type Child } from './lib.js';

/**
 * Entry "backlog": does a large retry backlog slow the queue down or blow up a worker?
 * (a) Claim cost: a fresh database holds SIZE pending notifications (each its own delivery job),
 *     all but DUE of them due later (a retry backlog: 1 min … 3 h ahead), DUE due now. Time CLAIMS
 *     calls of `claimDeliveries` as the delivery loop makes them (limit 16, autocommit); after
 *     each, they are given back with `releaseJobs` (one transaction, not timed) so every call sees
 *     the same due set. Also timed: the transactional loop's claim (register/process kinds, limit
 *     256) on the jobs table, which finds nothing. 1,000 vs 1,000,000 pending,
 *     goal: ratio ≤ 2.
 * (b) Worker memory: `rewards serve --role worker` on that database delivers WORK notifications
 *     (due now, real rows, to the keep-alive receiver) while the backlog waits; VmRSS sampled
 *     every 100 ms. Goal ≤ 256 MiB; baseline: the same worker on the 1,000-job database.
 * In --quick mode the large backlog is 100,000 jobs (and the rows say so).
 */

const SMALL = 1000;
const DUE = 100;
const CLAIM_LIMIT = 16;
const FUTURE_FROM_MS = 60_000;
const FUTURE_SPREAD_MS = 3 * 3_600_000;

interface Backend {
  name: 'sqlite' | 'postgres';
  /** Creates an empty database and returns how to reach it. */
  create(): Promise<Database>;
}

interface Database {
  env: Record<string, string>;
  open(): Storage;
  /** Inserts `future` notifications due later and `due` due now, straight into the table (each its own delivery job). */
  insertBacklog(future: number, due: number): Promise<void>;
  cleanup(): Promise<void>;
}

function sqliteBackend(): Backend {
  return {
    name: 'sqlite',
    async create() {
      const dir = mkdtempSync(join(tmpdir(), 'rewards-backlog-'));
      const file = join(dir, 'rewards.db');
      return {
        env: { DATABASE_URL: `sqlite:${file}` },
        open: () => openStorage(`sqlite:${file}`),
        async insertBacklog(future, due) {
          // One transaction of prepared 500-row inserts; synchronous=OFF for this loader connection only.
          const db = openSqliteDatabase(file);
          db.pragma('busy_timeout = 5000');
          db.pragma('synchronous = OFF');
          const columns = '(id, account_id, request_id, event, url, payload, status, attempt_count, created_at, updated_at, test, has_waiters, run_at, runs, postponed)';
          const row = "(?, 'acc_backlog', ?, 'registered-requests', 'https://example.com/hook', '{}', 'pending', 0, ?, ?, 0, 0, ?, 0, 0)";
          const CHUNK = 500;
          const statement = (n: number) => db.prepare(`insert into notifications ${columns} values ${Array(n).fill(row).join(', ')}`);
          const full = statement(CHUNK);
          const now = Date.now();
          const total = future + due;
          db.transaction(() => {
            for (let start = 0; start < total; start += CHUNK) {
              const n = Math.min(CHUNK, total - start);
              const values: unknown[] = [];
              for (let i = start; i < start + n; i++) {
                const runAt = i < due ? now - 1000 + (i % 1000) : now + FUTURE_FROM_MS + Math.floor(Math.random() * FUTURE_SPREAD_MS);
                values.push(`msg_backlog_${i}`, `req_backlog_${i}`, now, now, runAt);
              }
              (n === CHUNK ? full : statement(n)).run(...values);
            }
          })();
          db.close();
        },
        async cleanup() {
          rmSync(dir, { recursive: true, force: true });
        },
      };
    },
  };
}

function postgresBackend(url: string): Backend {
  return {
    name: 'postgres',
    async create() {
      const schema: PgSchema = await createPgSchema(url);
      return {
        env: { DATABASE_URL: schema.databaseUrl },
        open: () => schema.open(2),
        async insertBacklog(future, due) {
          const now = Date.now();
          // generate_series in one statement; ANALYZE afterwards stands in for autovacuum's autoanalyze.
          await schema.query(
            `insert into notifications (id, account_id, request_id, event, url, payload, status, attempt_count, created_at, updated_at, test, has_waiters, run_at, runs, postponed)
             select 'msg_backlog_' || g, 'acc_backlog', 'req_backlog_' || g, 'registered-requests', 'https://example.com/hook', '{}', 'pending', 0, $3::bigint, $3::bigint, 0, 0,
                    case when g <= $2 then $3::bigint - 1000 + (g % 1000) else $3::bigint + $4 + (random() * $5)::bigint end, 0, 0
             from generate_series(1, $1::int) g`,
            [future + due, due, now, FUTURE_FROM_MS, FUTURE_SPREAD_MS],
          );
          await schema.query('analyze notifications');
        },
        cleanup: () => schema.drop(),
      };
    },
  };
}

interface Measured {
  size: number;
  insertMs: number;
  /** Mean and p99 of one delivery-loop claim, ms. */
  claimMean: number;
  claimP99: number;
  /** Mean of the transactional loop's (empty) claim, ms. */
  otherKindsMean: number;
  peakRssMiB: number;
  workMs: number;
}

/** Gives claimed deliveries back untouched, so the next claim measures the same backlog (the claim is not counted). */
async function releaseJobs(db: Executor, jobs: Delivery[]): Promise<void> {
  if (jobs.length === 0) return;
  await db
    .updateTable('notifications')
    .set((eb) => ({ lease: null, lease_until: null, runs: eb('runs', '-', 1) }))
    .where(
      'id',
      'in',
      jobs.map((job) => job.id),
    )
    .execute();
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const p99 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.ceil(0.99 * xs.length) - 1]!;
const ms = (n: number) => `${n < 1 ? (n * 1000).toFixed(0) + ' µs' : n.toFixed(2) + ' ms'}`;

async function measureClaims(storage: Storage, calls: number): Promise<Pick<Measured, 'claimMean' | 'claimP99' | 'otherKindsMean'>> {
  const claimTimes: number[] = [];
  const otherTimes: number[] = [];
  for (let i = 0; i < calls + 20; i++) {
    let started = performance.now();
    const jobs = await claimDeliveries(storage.db, { workerId: 'bench', limit: CLAIM_LIMIT, leaseMs: 60_000, now: Date.now() });
    const claimMs = performance.now() - started;
    if (jobs.length !== CLAIM_LIMIT) throw new Error(`claimed ${jobs.length} of ${CLAIM_LIMIT} due jobs`);
    await storage.db.transaction().execute((tx) => releaseJobs(tx, jobs));
    started = performance.now();
    const none = await claimDueJobs(storage.db, { workerId: 'bench', kinds: [REGISTER_REQUEST_JOB, PROCESS_REQUEST_JOB], limit: 256, leaseMs: 60_000 });
    const otherMs = performance.now() - started;
    if (none.length !== 0) throw new Error('claimed request jobs that nobody enqueued');
    if (i >= 20) {
      // the first 20 rounds warm caches and the JIT
      claimTimes.push(claimMs);
      otherTimes.push(otherMs);
    }
  }
  return { claimMean: mean(claimTimes), claimP99: p99(claimTimes), otherKindsMean: mean(otherTimes) };
}

/** A worker process delivers `work` notifications while the backlog waits; returns its peak RSS. */
async function measureWorker(db: Database, secretKey: string, tenant: Tenant, receiver: Child, work: number): Promise<{ peakRssMiB: number; workMs: number }> {
  const storage = db.open();
  try {
    await preloadNotifications(storage, tenant, work, 'backlog');
  } finally {
    await storage.close();
  }
  await resetReceiver(receiver.url);
  const started = Date.now();
  const worker = await startWorkerProcess({ ...db.env, SECRET_KEY: secretKey, DATA_DIR: mkdtempSync(join(tmpdir(), 'rewards-backlog-worker-')) });
  let peak = 0;
  try {
    let done = false;
    const sampler = (async () => {
      while (!done) {
        peak = Math.max(peak, rssMiB(worker.pid));
        await sleep(100);
      }
    })();
    await waitForReceiverCount(receiver.url, work, 'backlog worker');
    // Keep sampling a moment after the last delivery (attempts being recorded, GC).
    await sleep(1000);
    done = true;
    await sampler;
    const stats = await receiverStats(receiver.url);
    if (stats.count !== work) throw new Error(`backlog worker: ${stats.count} calls for ${work} notifications`);
    return { peakRssMiB: peak, workMs: Date.now() - started };
  } finally {
    await worker.stop();
  }
}

/** Notifications the worker delivers while its memory is watched (fewer in --quick mode). */
const workSize = (options: BenchOptions) => (options.quick ? 2000 : 20_000);

async function measure(backend: Backend, size: number, options: BenchOptions, receiver: Child, watchWorker = true): Promise<Measured> {
  const db = await backend.create();
  const secretKey = randomBytes(32).toString('base64');
  try {
    let tenant: Tenant | undefined;
    if (watchWorker) {
      // The API process migrates the empty database and bootstraps the operator; then it goes away.
      const api = await startRewards({ ...db.env, SECRET_KEY: secretKey, LOG_LEVEL: 'warn' }, ['--role', 'api']);
      try {
        tenant = await setUpTenant(api.url, api.operator, receiver.url);
      } finally {
        await api.stop();
        rmSync(api.dataDir, { recursive: true, force: true });
      }
    } else {
      // Claims alone need only the schema.
      const storage = db.open();
      await migrateToLatest(storage.db).finally(() => storage.close());
    }
    process.stderr.write(`  ${backend.name}: inserting ${fmt(size)} pending jobs…\n`);
    const insertStarted = performance.now();
    await db.insertBacklog(size - DUE, DUE);
    const insertMs = performance.now() - insertStarted;
    const storage = db.open();
    let claims;
    try {
      claims = await measureClaims(storage, options.quick ? 200 : 1000);
    } finally {
      await storage.close();
    }
    const worker = tenant ? await measureWorker(db, secretKey, tenant, receiver, workSize(options)) : { peakRssMiB: NaN, workMs: NaN };
    return { size, insertMs, ...claims, ...worker };
  } finally {
    await db.cleanup();
  }
}

export async function benchBacklog(options: BenchOptions): Promise<BenchRow[]> {
  const large = options.quick ? 100_000 : 1_000_000;
  const quickNote = options.quick ? ' (--quick: 100,000, not 1,000,000)' : '';
  const backends = [sqliteBackend(), ...(options.postgresUrl ? [postgresBackend(options.postgresUrl)] : [])];
  const receiver = await startReceiver();
  const rows: BenchRow[] = [];
  try {
    for (const backend of backends) {
      // --quick watches the worker's memory with the large backlog only (the goal is absolute).
      const small = await measure(backend, SMALL, options, receiver, !options.quick);
      const big = await measure(backend, large, options, receiver);
      const ratio = big.claimMean / small.claimMean;
      const work = workSize(options);
      rows.push(
        {
          entry: `backlog: claim 16 due jobs, ${fmt(large)} pending${quickNote} [${backend.name}]`,
          figure: `${ms(big.claimMean)} mean, p99 ${ms(big.claimP99)} (${DUE} due, rest 1 min–3 h ahead; loaded in ${(big.insertMs / 1000).toFixed(1)} s)`,
          baseline: `${fmt(SMALL)} pending: ${ms(small.claimMean)} mean, p99 ${ms(small.claimP99)}`,
          ratio,
          goal: '≤ 2',
          met: ratio <= 2,
        },
        {
          entry: `backlog: transactional loop's claim (no request jobs), ${fmt(large)} pending${quickNote} [${backend.name}]`,
          figure: `${ms(big.otherKindsMean)} mean`,
          baseline: `${fmt(SMALL)} pending: ${ms(small.otherKindsMean)} mean`,
          ratio: big.otherKindsMean / small.otherKindsMean,
        },
        {
          entry: `backlog: worker peak RSS delivering ${fmt(work)} notifications, ${fmt(large)} pending${quickNote} [${backend.name}]`,
          figure: `${big.peakRssMiB.toFixed(0)} MiB (${(big.workMs / 1000).toFixed(1)} s from start to last delivery)`,
          baseline: options.quick
            ? `${fmt(SMALL)} pending: not measured with --quick (ratio: to the 256 MiB goal)`
            : `${fmt(SMALL)} pending: ${small.peakRssMiB.toFixed(0)} MiB (${(small.workMs / 1000).toFixed(1)} s)`,
          ratio: big.peakRssMiB / (options.quick ? 256 : small.peakRssMiB),
          goal: '≤ 256 MiB',
          met: big.peakRssMiB <= 256,
        },
      );
    }
    return rows;
  } finally {
    await receiver.stop();
  }
}
