import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import { maskRequestHeaders } from '../src/domain/notifications/request-headers.js';
import { buildWebhookHeaders } from '../src/domain/notifications/signing.js';
import { sampleNotificationPayload } from '../src/domain/notifications/test-sample.js';
import { openStorage } from '../src/storage/database.js';
import { ensureLogPartitions, listLogPartitions } from '../src/storage/log-partitions.js';
import { migrateToLatest } from '../src/storage/migrations/index.js';
import { claimDeliveries } from '../src/storage/deliveries.js';
import { findNotificationsForDelivery, insertNotifications, newNotificationRow, recordAttempts } from '../src/storage/repositories/notifications.js';
import { USER_AGENT } from '../src/worker/outbound/http-client.js';
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
 *
 * Then what each step writes to the WAL per notification when the worker batches (BATCH at a time,
 * as a busy service does: an ingest batch's insert, a claim, a group commit's settle with its
 * attempt rows), over WAL_ROWS notifications, half of each event with the bodies test sends carry:
 * the breakdown behind the peers entry's WAL figure (docs/capacity.md). `pg_current_wal_lsn()`
 * before and after each step, after a CHECKPOINT; a claim that a batch hands off (leased at insert)
 * writes nothing. Each settled attempt logs the headers of its call as the worker does
 * (`request_headers`, masked compact JSON): one signature and a Bearer credential, no custom header.
 */

const HISTORY = 20_000;
const DAY = 86_400_000;
const STEPS = ['insert', 'claim', 'load', 'settle'] as const;
const WAL_STEPS = ['insert', 'claim', 'settle'] as const;
const BATCH = 256;
const WAL_ROWS = 20 * BATCH;
type Costs = Record<(typeof STEPS)[number], number>;
const SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;

/** The `request_headers` the worker logs for a call of this notification (worker/outbound/deliver.ts). */
function loggedHeaders(id: string, event: string): string {
  const webhook = buildWebhookHeaders({ msgId: id, timestamp: Math.floor(Date.now() / 1000), body: '{}', secrets: [SECRET] });
  const sent = { 'content-type': 'application/json', 'user-agent': USER_AGENT, 'x-webhook-event': event, ...webhook, authorization: 'Bearer bench-receiver-token-0123456789' };
  return JSON.stringify(maskRequestHeaders(sent));
}

/** The attempt row of a delivery answered 204 at once, as the worker logs it. */
function succeededAttempt(id: string, event: string) {
  return {
    notification_id: id,
    attempt: 1,
    started_at: Date.now(),
    url: 'https://receiver.example/hook',
    status_code: 204,
    latency_ms: 1,
    response_body: null,
    error: null,
    outcome: 'succeeded' as const,
    request_headers: loggedHeaders(id, event),
    retry_after: null,
  };
}

export async function benchStatements(options: BenchOptions): Promise<BenchRow[]> {
  const entry = (step: string) => `statements, one notification at a time: ${step} [postgres]`;
  if (!options.postgresUrl) return [{ entry: entry('delivery path'), figure: 'skipped: set BENCH_POSTGRES_URL', baseline: '—', ratio: NaN }];
  const rounds = options.quick ? 200 : 400;
  const turns = options.quick ? 2 : 3;
  const prepared: Costs[] = [];
  const unprepared: Costs[] = [];
  const written: WalBytes[] = [];
  for (let turn = 0; turn < turns; turn++) {
    unprepared.push(await measure(options.postgresUrl, false, rounds));
    prepared.push(await measure(options.postgresUrl, true, rounds));
    written.push(await measureWal(options.postgresUrl));
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  const timings = STEPS.map((step) => {
    const figure = median(prepared.map((costs) => costs[step]));
    const baseline = median(unprepared.map((costs) => costs[step]));
    return { entry: entry(step), figure: `prepared ${figure.toFixed(0)} µs`, baseline: `unprepared ${baseline.toFixed(0)} µs`, ratio: figure / baseline };
  });
  const wal = WAL_STEPS.map((step) => ({
    entry: `statements, WAL per notification in batches of ${BATCH}: ${step} [postgres]`,
    figure: `${median(written.map((bytes) => bytes[step])).toFixed(0)} B`,
    baseline: '—',
    ratio: NaN,
  }));
  return [...timings, ...wal];
}

type WalBytes = Record<(typeof WAL_STEPS)[number], number>;

async function measureWal(url: string): Promise<WalBytes> {
  const schema = await createPgSchema(url);
  const storage = openStorage(url, { schema: schema.schema, poolSize: 2 });
  try {
    await migrateToLatest(storage.db);
    await ensureLogPartitions(storage.db, { now: Date.now(), periodMs: 22.5 * DAY });
    const now = Date.now();
    const rows = Array.from({ length: WAL_ROWS }, (_, i) => {
      const event = i % 2 === 0 ? ('registered-requests' as const) : ('processed-requests' as const);
      const requestId = `req_bench${String(i >> 1).padStart(21, '0')}`;
      const payload = JSON.stringify(sampleNotificationPayload(event, requestId, now));
      return newNotificationRow({ accountId: 'acc_bench', requestId, subscriptionId: `sub_bench_${event}`, event, url: 'https://receiver.example/hook', payload }, now);
    });
    const lsn = async () => (await sql<{ lsn: string }>`select pg_current_wal_lsn()::text as lsn`.execute(storage.db)).rows[0]!.lsn;
    const bytes = {} as WalBytes;
    const step = async (name: keyof WalBytes, work: () => Promise<void>) => {
      const before = await lsn();
      await work();
      const after = await lsn();
      const {
        rows: [diff],
      } = await sql<{ bytes: string }>`select pg_wal_lsn_diff(${after}::pg_lsn, ${before}::pg_lsn)::text as bytes`.execute(storage.db);
      bytes[name] = Number(diff!.bytes) / WAL_ROWS;
    };
    // A checkpoint first: the pages the steps write are then new since it, and no step pays for
    // full-page images of pages that an earlier phase of the suite left behind.
    await sql`checkpoint`.execute(storage.db);
    await waitForQuietMachine({ postgresUrl: url });
    await step('insert', async () => {
      for (let i = 0; i < rows.length; i += BATCH) await insertNotifications(storage.db, rows.slice(i, i + BATCH));
    });
    const eventOf = new Map(rows.map((row) => [row.id, row.event]));
    const jobs: Awaited<ReturnType<typeof claimDeliveries>> = [];
    await step('claim', async () => {
      while (jobs.length < rows.length) {
        const claimed = await claimDeliveries(storage.db, { workerId: 'bench', limit: BATCH, leaseMs: 60_000, now: Date.now() });
        if (claimed.length === 0) throw new Error('the claim found nothing');
        jobs.push(...claimed);
      }
    });
    await step('settle', async () => {
      for (let i = 0; i < jobs.length; i += BATCH) {
        const outcomes = jobs.slice(i, i + BATCH).map((job) => ({
          attempt: succeededAttempt(job.id, eventOf.get(job.id)!),
          lease: job.lease,
          status: 'succeeded' as const,
          nextAttemptAt: null,
          now: Date.now(),
        }));
        await recordAttempts(storage.db, outcomes);
      }
    });
    process.stderr.write(`  statements WAL per notification, batches of ${BATCH}: ${WAL_STEPS.map((name) => `${name} ${bytes[name].toFixed(0)} B`).join(', ')}\n`);
    return bytes;
  } finally {
    await storage.close();
    await schema.drop();
  }
}

async function measure(url: string, preparedStatements: boolean, rounds: number): Promise<Costs> {
  const schema = await createPgSchema(url);
  const storage = openStorage(url, { schema: schema.schema, poolSize: 2, preparedStatements });
  try {
    await migrateToLatest(storage.db);
    await ensureLogPartitions(storage.db, { now: Date.now(), periodMs: 22.5 * DAY });
    const row = (n: string, at: number) =>
      newNotificationRow(
        { accountId: 'acc_bench', requestId: `req_${n}`, subscriptionId: null, event: 'registered-requests', url: 'https://receiver.example/hook', payload: '{"id":"req_bench"}' },
        at,
      );
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
      const [job] = await timed('claim', () => claimDeliveries(storage.db, { workerId: 'bench', limit: 16, leaseMs: 60_000, now: Date.now() }));
      if (!job) throw new Error('the claim found nothing');
      await timed('load', () => findNotificationsForDelivery(storage.db, [job.id]));
      const attempt = succeededAttempt(job.id, 'registered-requests');
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
