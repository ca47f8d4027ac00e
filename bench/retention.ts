import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { newId } from '../src/domain/ids.js';
import { deleteOldNotifications } from '../src/services/notification-retention.js';
import { ensureLogPartitions, listLogPartitions } from '../src/storage/log-partitions.js';
import { migrateToLatest } from '../src/storage/migrations/index.js';
import { createPgSchema, fmt, type PgSchema } from './cluster.js';
import { waitForQuietMachine, type BenchOptions, type BenchRow } from './lib.js';

/**
 * Entry "retention" (only when named: `--only retention`; PostgreSQL, needs BENCH_POSTGRES_URL):
 * NOTIFICATION_RETENTION over COUNT ended notifications, each with one attempt, made over four
 * periods of the delivery log (10,000,000; 1,000,000 with --quick). Measured: wall time and WAL
 * (`pg_current_wal_lsn()` before and after; the machine is otherwise quiet) of the worker's
 * purge, `deleteOldNotifications`, once every one of them is past the retention.
 * - **drop**: the rows sit in their periods' partitions, as the service writes them
 *   (storage/log-partitions.ts): the purge drops the four periods, with their attempts.
 * - **delete** (the baseline): the same rows in the default partition, where no period's partition
 *   was made: the purge deletes them row by row, 1,000 per transaction, as it does on SQLite and
 *   did on PostgreSQL before migration 017.
 * Each on a fresh schema, loaded the same way (in ULID order, 20,000 rows a statement), then
 * VACUUM ANALYZE and a CHECKPOINT, so neither run pays for the load. Also measured: the longest a
 * reader of the whole log (a statement on every partition's due index, every 20 ms, on a
 * connection of its own) waited during the purge. Checked: nothing is left.
 */

const PERIOD = 86_400_000;
const PERIODS = 4;
const CHUNK = 20_000;

export async function benchRetention(options: BenchOptions): Promise<BenchRow[]> {
  const count = options.quick ? 1_000_000 : 10_000_000;
  const entry = (what: string) => `retention, ${fmt(count)} ended notifications with their attempts: ${what} [postgres]`;
  if (!options.postgresUrl) return [{ entry: entry('drop vs delete'), figure: 'skipped: set BENCH_POSTGRES_URL', baseline: '—', ratio: NaN }];
  // The periods a day ahead, so the schema's own current period (made at migration) is not among them.
  const start = (Math.floor(Date.now() / PERIOD) + 2) * PERIOD;
  const drop = await measure(options.postgresUrl, count, start, true);
  const remove = await measure(options.postgresUrl, count, start, false);
  const row = (what: string, figure: number, baseline: number, unit: (n: number) => string): BenchRow => ({
    entry: entry(what),
    figure: `drop ${unit(figure)}`,
    baseline: `delete ${unit(baseline)}`,
    ratio: figure / baseline,
  });
  return [
    row('time', drop.ms, remove.ms, (ms) => `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 0)} s`),
    row('WAL', drop.walBytes, remove.walBytes, (bytes) => `${fmt(Math.round(bytes / 1_048_576))} MiB`),
    row('longest wait of a reader of the log', drop.stallMs, remove.stallMs, (ms) => `${ms.toFixed(0)} ms`),
  ];
}

async function measure(url: string, count: number, start: number, periods: boolean): Promise<{ ms: number; walBytes: number; stallMs: number }> {
  const schema = await createPgSchema(url);
  const storage = schema.open(4);
  try {
    await migrateToLatest(storage.db);
    if (periods) await ensureLogPartitions(storage.db, { now: start + 1, periodMs: PERIOD, aheadMs: (PERIODS - 1) * PERIOD });
    await load(schema, count, start);
    await schema.query('vacuum analyze notifications');
    await schema.query('vacuum analyze notification_attempts');
    await schema.query('checkpoint');
    await waitForQuietMachine({ postgresUrl: url });
    const retention = PERIOD;
    const now = start + PERIODS * PERIOD + retention;
    const lsn = async () => (await schema.query<{ lsn: string }>('select pg_current_wal_lsn()::text as lsn')).rows[0]!.lsn;
    const before = await lsn();
    const probe = startProbe(schema);
    const began = performance.now();
    const result = await deleteOldNotifications(storage.db, retention, now);
    const ms = performance.now() - began;
    const stallMs = await probe.stop();
    const after = await lsn();
    const walBytes = Number((await schema.query<{ bytes: string }>('select pg_wal_lsn_diff($1, $2) as bytes', [after, before])).rows[0]!.bytes);
    const left =
      Number((await schema.query<{ n: string }>('select count(*) as n from notifications')).rows[0]!.n) +
      Number((await schema.query<{ n: string }>('select count(*) as n from notification_attempts')).rows[0]!.n);
    if (left !== 0) throw new Error(`retention left ${left} rows`);
    process.stderr.write(
      `  retention ${periods ? 'drop' : 'delete'}: ${(ms / 1000).toFixed(1)} s, ${(walBytes / 1_048_576).toFixed(0)} MiB WAL, a reader waited ${stallMs.toFixed(0)} ms at most (${result.dropped.length} partitions dropped, ${fmt(result.deleted)} rows deleted; partitions now ${(await listLogPartitions(storage.db)).length})\n`,
    );
    return { ms, walBytes, stallMs };
  } finally {
    await storage.close();
    await schema.drop();
  }
}

/**
 * A reader of the whole log beside the purge, as the delivery loop's claim is one: every 20 ms a
 * statement that reads each partition's due index. Returns, when stopped, its longest run.
 */
function startProbe(schema: PgSchema): { stop(): Promise<number> } {
  let running = true;
  let longest = 0;
  const loop = (async () => {
    const client = new pg.Client({ connectionString: schema.databaseUrl });
    await client.connect();
    try {
      while (running) {
        const began = performance.now();
        await client.query("select count(*) from notifications where status = 'pending' and run_at is not null and run_at < 0");
        longest = Math.max(longest, performance.now() - began);
        await sleep(20);
      }
    } finally {
      await client.end();
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return longest;
    },
  };
}

/** COUNT ended notifications spread evenly over the periods from `start`, each with its attempt, in id order. */
async function load(schema: PgSchema, count: number, start: number): Promise<void> {
  const began = performance.now();
  const step = (PERIODS * PERIOD) / count;
  for (let offset = 0; offset < count; offset += CHUNK) {
    const ids: string[] = [];
    const times: number[] = [];
    for (let i = offset; i < Math.min(count, offset + CHUNK); i++) {
      const at = Math.floor(start + i * step);
      ids.push(newId('msg', at));
      times.push(at);
    }
    await schema.query(
      `with made as (
         insert into notifications (id, account_id, request_id, subscription_id, event, url, payload, status, attempt_count, last_status_code, created_at, updated_at, completed_at, test, has_waiters, runs, postponed)
         select u.id, 'acc_' || (u.n % 10), 'req_' || u.id, 'sub_' || (u.n % 20), 'processed-requests', 'https://receiver.example/hook', $3, 'succeeded', 1, 204, u.at, u.at, u.at + 40, 0, 0, 0, 0
           from unnest($1::text[], $2::bigint[]) with ordinality as u(id, at, n)
         returning id, created_at)
       insert into notification_attempts (notification_id, attempt, started_at, url, status_code, latency_ms, outcome)
       select id, 1, created_at + 1, 'https://receiver.example/hook', 204, 39, 'succeeded' from made`,
      [ids, times, PAYLOAD],
    );
    if (offset % 1_000_000 === 0 && offset > 0) process.stderr.write(`  retention: ${fmt(offset)} loaded, ${((performance.now() - began) / 1000).toFixed(0)} s\n`);
    await sleep(0);
  }
}

/** A processed-requests body of a realistic size (about 400 bytes). */
const PAYLOAD = JSON.stringify({
  id: 'req_01kdvdna000t8ajrjeg1eyv15m',
  experience: 'exp_01kdvdna000t8ajrjeg1eyv15n',
  status: 'delivered',
  processedAt: '2026-11-26T12:00:00.000Z',
  prizes: [
    { prize: 'prz_01kdvdna000t8ajrjeg1eyv15p', name: 'Voucher 10', code: 'VCH-8D2F-11AA', status: 'delivered' },
    { prize: 'prz_01kdvdna000t8ajrjeg1eyv15q', name: 'Free delivery', code: 'FRD-77C1-03BD', status: 'delivered' },
  ],
  customer: { reference: 'cust-000123', email: 'c***@example.com' },
});
