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
  unfinishedWork,
  waitForReceiverCount,
  type ReceiverStats,
  type WorkerProcess,
} from './cluster.js';
import { sampleDiagnostics } from './diagnostics.js';
import { freePort, startRewards, waitForQuietMachine, type BenchOptions, type BenchRow } from './lib.js';

/**
 * Entry "scale-out": notification delivery throughput with 1, 2 and 3 `rewards serve --role
 * worker` processes on one PostgreSQL schema, to the keep-alive receiver of
 * bench/servers/receiver.ts (its own process). For each worker count the workers are started and
 * warmed up (WARMUP deliveries), then COUNT notifications and their delivery jobs are committed at
 * once (NOTIFY wakes every worker) and the rate is measured at the receiver from the first to the
 * last arrival. Ratio: rate with N workers / rate with 1 worker, same run. Every worker opens at
 * most 8 connections to one host, so N workers bring 8·N connections to the receiver.
 * The figures only mean something on a machine with cores to spare: on 2 cores the workers, the
 * receiver and PostgreSQL compete for the same CPUs. What cores cannot explain is a collapse, so
 * N workers delivering less than half of what one does fails the suite (`required`), and each
 * measurement prints what the workers and PostgreSQL did meanwhile (bench/diagnostics.ts).
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
      const metricsPorts = await Promise.all(Array.from({ length: n }, () => freePort()));
      workers = await Promise.all(metricsPorts.map((port) => startWorkerProcess({ ...env, METRICS_PORT: String(port) })));
      await resetReceiver(receiver.url);
      await preloadNotifications(storage, tenant, WARMUP, `warm${n}`);
      await waitForReceiverCount(receiver.url, WARMUP, `scale-out warm-up with ${n} workers`);
      // Let the warm-up's attempts be recorded before the measured batch.
      for (;;) {
        if ((await unfinishedWork(storage)) === 0) break;
        await sleep(50);
      }
      await waitForQuietMachine({ postgresUrl: options.postgresUrl });
      await resetReceiver(receiver.url);
      const diagnostics = await sampleDiagnostics(
        metricsPorts.map((port) => `http://127.0.0.1:${port}/metrics`),
        options.postgresUrl,
      );
      await preloadNotifications(storage, tenant, count, `run${n}`);
      const stats = await waitForReceiverCount(receiver.url, count, `scale-out with ${n} workers`);
      rates.set(n, perSecond(stats));
      process.stderr.write(`  ${n} worker(s): ${fmt(perSecond(stats))} notifications/s\n    ${await diagnostics.stop()}\n`);
      await Promise.all(workers.map((w) => w.stop()));
      workers = [];
    }
    const one = rates.get(1)!;
    return WORKER_COUNTS.filter((n) => n > 1).map((n) => ({
      entry: `scale-out: delivery throughput, ${n} worker processes [postgres]`,
      figure: `${fmt(rates.get(n)!)} notifications/s (${fmt(count)} preloaded, ${8 * n} connections to the receiver)`,
      baseline: `1 worker process ${fmt(one)} notifications/s`,
      ratio: rates.get(n)! / one,
      goal: '≥ 0.50 (no collapse)',
      met: rates.get(n)! / one >= 0.5,
      required: true,
    }));
  } finally {
    await Promise.all(workers.map((w) => w.stop()));
    await storage.close();
    await receiver.stop();
    await schema.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
