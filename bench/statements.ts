import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import { openStorage } from '../src/storage/database.js';
import { ensureLogPartitions, listLogPartitions } from '../src/storage/log-partitions.js';
import { migrateToLatest } from '../src/storage/migrations/index.js';
import { claimDueDeliveries } from '../src/storage/queue/delivery-rows.js';
import { findNotificationsForDelivery, insertNotifications, newNotificationRow, recordAttempts } from '../src/storage/repositories/notifications.js';
import { createPgSchema } from './cluster.js';
import { waitForQuietMachine, type BenchOptions, type BenchRow } from './lib.js';

/**
 * Entry "statements" (PostgreSQL, needs BENCH_POSTGRES_URL): what the delivery path's statements
 * cost one notification at a time, the case of a quiet service (each claim and settle carries one
 * notification): insert it, claim it, load it, settle it, ROUNDS times, beside 20,000 ended
 * notifications of history, on the partitioned log as the service makes it (the current period,
 * the next, migration 017's legacy and default partitions). Figure: with the hot statements as
 * named prepared statements (the default); baseline: the same with DATABASE_PREPARED_STATEMENTS=off,
 * each statement planned at every run. Each on a fresh schema, in turns (three of each, two with
 * --quick); the medians of the turns.
 */

const HISTORY = 20_000;
const DAY = 86_400_000;
const STEPS = ['insert', 'claim', 'load', 'settle'] as const;
type Costs = Record<(typeof STEPS)[number], number>;

export async function benchStatements(options: BenchOptions): Promise<BenchRow[]> {
  const entry = (step: string) => `statements, one notification at a time: ${step} [postgres]`;
  if (!options.postgresUrl) return [{ entry: entry('delivery path'), figure: 'skipped: set BENCH_POSTGRES_URL', baseline: '—', ratio: NaN }];
  const rounds = options.quick ? 200 : 400;
  const turns = options.quick ? 2 : 3;
  const prepared: Costs[] = [];
  const unprepared: Costs[] = [];
  for (let turn = 0; turn < turns; turn++) {
    unprepared.push(await measure(options.postgresUrl, false, rounds));
    prepared.push(await measure(options.postgresUrl, true, rounds));
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  return STEPS.map((step) => {
    const figure = median(prepared.map((costs) => costs[step]));
    const baseline = median(unprepared.map((costs) => costs[step]));
    return { entry: entry(step), figure: `prepared ${figure.toFixed(0)} µs`, baseline: `unprepared ${baseline.toFixed(0)} µs`, ratio: figure / baseline };
  });
}

async function measure(url: string, preparedStatements: boolean, rounds: number): Promise<Costs> {
  const schema = await createPgSchema(url);
  const storage = openStorage(url, { schema: schema.schema, poolSize: 2, preparedStatements });
  try {
    await migrateToLatest(storage.db);
    await ensureLogPartitions(storage.db, { now: Date.now(), periodMs: 22.5 * DAY });
    const row = (n: string, at: number) => newNotificationRow({ accountId: 'acc_bench', requestId: `req_${n}`, subscriptionId: null, event: 'registered-requests', url: 'https://receiver.example/hook', payload: '{"id":"req_bench"}' }, at);
    const history = Array.from({ length: HISTORY }, (_, i) => ({ ...row(`h${i}`, Date.now()), status: 'succeeded' as const, run_at: null }));
    for (let i = 0; i < history.length; i += 1000) await insertNotifications(storage.db, history.slice(i, i + 1000));
    await sql`vacuum analyze notifications`.execute(storage.db);
    await waitForQuietMachine({ postgresUrl: url });
    const total: Costs = { insert: 0, claim: 0, load: 0, settle: 0 };
    const timed = async <T>(step: keyof Costs, work: () => Promise<T>): Promise<T> => {
      const began = performance.now();
      const result = await work();
      total[step] += performance.now() - began;
      return result;
    };
    for (let i = 0; i < rounds; i++) {
      await timed('insert', () => insertNotifications(storage.db, [row(String(i), Date.now())]));
      const [job] = await timed('claim', () => claimDueDeliveries(storage.db, { workerId: 'bench', limit: 16, leaseMs: 60_000, now: Date.now(), maxRuns: 20 }));
      if (!job) throw new Error('the claim found nothing');
      await timed('load', () => findNotificationsForDelivery(storage.db, [job.id]));
      const attempt = { notification_id: job.id, attempt: 1, started_at: Date.now(), url: 'https://receiver.example/hook', status_code: 204, latency_ms: 1, response_body: null, error: null, outcome: 'succeeded' as const };
      await timed('settle', () => recordAttempts(storage.db, [{ attempt, lease: job.lease, status: 'succeeded', nextAttemptAt: null, now: Date.now() }]));
    }
    const partitions = (await listLogPartitions(storage.db)).length;
    const costs = Object.fromEntries(STEPS.map((step) => [step, (total[step] / rounds) * 1000])) as Costs;
    process.stderr.write(`  statements ${preparedStatements ? 'prepared' : 'unprepared'} (${partitions} partitions): ${STEPS.map((step) => `${step} ${costs[step].toFixed(0)} µs`).join(', ')}\n`);
    return costs;
  } finally {
    await storage.close();
    await schema.drop();
  }
}
