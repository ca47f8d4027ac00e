import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  createPgSchema,
  fmt,
  preloadNotifications,
  resetReceiver,
  setUpTenant,
  startReceiver,
  startWorkerProcess,
  waitForReceiverCount,
  type ReceiverStats,
  type WorkerProcess,
} from './cluster.js';
import { startRewards, type BenchOptions, type BenchRow } from './lib.js';

/**
 * Entry "scale-out": notification delivery throughput with 1, 2 and 3 `rewards serve --role
 * worker` processes on one PostgreSQL schema, to the keep-alive receiver of
 * bench/servers/receiver.ts (its own process). For each worker count the workers are started and
 * warmed up (WARMUP deliveries), then COUNT notifications and their delivery jobs are committed at
 * once (NOTIFY wakes every worker) and the rate is measured at the receiver from the first to the
 * last arrival. Ratio: rate with N workers / rate with 1 worker, same run. Every worker opens at
 * most 8 connections to one host, so N workers bring 8·N connections to the receiver.
 * The figures only mean something on a machine with cores to spare: on 2 cores the workers, the
 * receiver and PostgreSQL compete for the same CPUs.
 */

const WARMUP = 300;
const WORKER_COUNTS = [1, 2, 3];

const perSecond = (stats: ReceiverStats) => ((stats.count - 1) / (stats.last - stats.first)) * 1000;

export async function benchScaleOut(options: BenchOptions): Promise<BenchRow[]> {
  if (!options.postgresUrl) {
    return [{ entry: 'scale-out: delivery throughput with 1/2/3 worker processes [postgres]', figure: 'skipped: set BENCH_POSTGRES_URL', baseline: '—', ratio: NaN }];
  }
  const count = options.quick ? 1500 : 15_000;
  const schema = await createPgSchema(options.postgresUrl);
  const receiver = await startReceiver();
  const secretKey = randomBytes(32).toString('base64');
  const dataDir = mkdtempSync(join(tmpdir(), 'rewards-scale-out-'));
  const env = { DATABASE_URL: schema.databaseUrl, SECRET_KEY: secretKey, DATA_DIR: dataDir, LOG_LEVEL: 'warn' };
  let workers: WorkerProcess[] = [];
  const storage = schema.open(2);
  try {
    const api = await startRewards({ DATABASE_URL: schema.databaseUrl, SECRET_KEY: secretKey, LOG_LEVEL: 'warn' }, ['--role', 'api']);
    const tenant = await setUpTenant(api.url, api.operator, receiver.url).finally(async () => {
      await api.stop();
      rmSync(api.dataDir, { recursive: true, force: true });
    });

    const rates = new Map<number, number>();
    for (const n of WORKER_COUNTS) {
      workers = await Promise.all(Array.from({ length: n }, () => startWorkerProcess(env)));
      await resetReceiver(receiver.url);
      await preloadNotifications(storage, tenant, WARMUP, `warm${n}`);
      await waitForReceiverCount(receiver.url, WARMUP, `scale-out warm-up with ${n} workers`);
      // Let the warm-up's attempts be recorded before the measured batch.
      for (;;) {
        const left = await storage.db.selectFrom('jobs').select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow();
        if (Number(left.n) === 0) break;
        await sleep(50);
      }
      await resetReceiver(receiver.url);
      await preloadNotifications(storage, tenant, count, `run${n}`);
      const stats = await waitForReceiverCount(receiver.url, count, `scale-out with ${n} workers`);
      rates.set(n, perSecond(stats));
      process.stderr.write(`  ${n} worker(s): ${fmt(perSecond(stats))} notifications/s\n`);
      await Promise.all(workers.map((w) => w.stop()));
      workers = [];
    }
    const one = rates.get(1)!;
    return WORKER_COUNTS.filter((n) => n > 1).map((n) => ({
      entry: `scale-out: delivery throughput, ${n} worker processes [postgres]`,
      figure: `${fmt(rates.get(n)!)} notifications/s (${fmt(count)} preloaded, ${8 * n} connections to the receiver)`,
      baseline: `1 worker process ${fmt(one)} notifications/s`,
      ratio: rates.get(n)! / one,
    }));
  } finally {
    await Promise.all(workers.map((w) => w.stop()));
    await storage.close();
    await receiver.stop();
    await schema.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
