import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import { STATS_WINDOWS, type CountedAttempt, type StatsWindow } from '../src/domain/notifications/endpoint-health.js';
import { getEndpointStats, recordEndpointHealth } from '../src/services/endpoint-health.js';
import { openStorage, type Storage } from '../src/storage/database.js';
import { migrateToLatest } from '../src/storage/migrations/index.js';
import { createPgSchema } from './cluster.js';
import type { BenchOptions, BenchRow } from './lib.js';

/**
 * Entry "stats": GET /subscriptions/{id}/stats with 1,000,000 attempts in the log (100,000 with
 * --quick). Ten subscriptions of one account share the attempts, spread evenly over the last
 * 7 days (one in seven answered 500, latencies 0–399 ms; of those
 * notifications, the last ones, about 14 per subscription, are still pending, the others failed). The attempt log is written in bulk; the rollup
 * is written the way the attempt log writer writes it (recordEndpointHealth, 10,000 attempts per
 * transaction). Timed: the route's service call (getEndpointStats: subscription lookup, rollup
 * sum, health row, pending count) for each window, 200 calls; baseline: the same window's counts
 * computed by scanning the attempt log (what the rollup avoids), 5 calls. The two must agree on
 * the counts (a check: the suite fails otherwise).
 */

const SUBSCRIPTIONS = 10;
const ACCOUNT = 'acc_stats_bench';
const subscriptionId = (i: number) => `sub_stats_bench_${i}`;

/** Attempt `g` (1-based), the same in SQL (bulk log) and in JS (rollup). */
function attemptAt(g: number, total: number, start: number): CountedAttempt {
  const failed = g % 7 === 0;
  return {
    subscriptionId: subscriptionId(g % SUBSCRIPTIONS),
    at: start + Math.floor((g * 7 * 86_400_000) / total),
    outcome: failed ? 'retry' : 'succeeded',
    latencyMs: (g * 7) % 400,
    statusCode: failed ? 500 : 200,
    error: failed ? 'callback answered HTTP 500' : null,
  };
}

async function fill(storage: Storage, total: number, now: number): Promise<number> {
  const { db, dialect } = storage;
  const start = now - 7 * 86_400_000 + 60_000;
  await db.insertInto('accounts').values({ id: ACCOUNT, name: 'stats bench', is_operator: 0, active: 1, created_at: now }).execute();
  for (let i = 0; i < SUBSCRIPTIONS; i++) {
    await db
      .insertInto('subscriptions')
      .values({
        id: subscriptionId(i),
        account_id: ACCOUNT,
        event: 'registered-request',
        description: '',
        active: 1,
        experiences: '[]',
        callback_url: 'https://hooks.example.com/x',
        callback_authorization_encrypted: null,
        callback_custom_headers: '{}',
        created_at: now,
        updated_at: now,
        disabled_reason: null,
        disabled_at: null,
        rate_limit: null,
      })
      .execute();
  }
  const began = performance.now();
  // The attempt log and its notifications, in bulk (same formulas as attemptAt).
  const series = sql`s`;
  const withSeries = sql`with recursive s(g) as (select 1 union all select g + 1 from s where g < ${total})`;
  const integerAt = sql`(cast(${start} as bigint) + (cast(g as bigint) * 7 * 86400000) / ${total})`;
  await sql`${withSeries} insert into notifications (id, account_id, request_id, subscription_id, event, url, payload, status, attempt_count, last_status_code, last_error, created_at, updated_at, completed_at, test)
            select 'msg_stats_' || g, ${ACCOUNT}, 'req_stats_' || g, 'sub_stats_bench_' || (g % ${sql.lit(SUBSCRIPTIONS)}), 'registered-requests', 'https://hooks.example.com/x', '{}',
                   case when g % 7 <> 0 then 'succeeded' when g > ${total - 1000} then 'pending' else 'failed' end, 1, null, null, ${integerAt}, ${integerAt}, ${integerAt}, 0
            from ${series}`.execute(db);
  await sql`${withSeries} insert into notification_attempts (notification_id, attempt, started_at, url, status_code, latency_ms, response_body, error, outcome)
            select 'msg_stats_' || g, 1, ${integerAt}, 'https://hooks.example.com/x', case when g % 7 = 0 then 500 else 200 end, (g * 7) % 400, null,
                   case when g % 7 = 0 then 'callback answered HTTP 500' end, case when g % 7 = 0 then 'retry' else 'succeeded' end
            from ${series}`.execute(db);
  // The rollup, as the attempt log writer writes it.
  const BATCH = 10_000;
  for (let from = 1; from <= total; from += BATCH) {
    const attempts = Array.from({ length: Math.min(BATCH, total - from + 1) }, (_, i) => attemptAt(from + i, total, start));
    await db.transaction().execute((tx) => recordEndpointHealth(tx, attempts, { now, disableAfterMs: 0 }));
  }
  // As autovacuum would on PostgreSQL; the service never analyzes SQLite.
  if (dialect.name === 'postgres') await sql`analyze`.execute(db);
  return performance.now() - began;
}

/** What the rollup spares: the window's attempts of one subscription read from the attempt log. */
async function scanAttemptLog(storage: Storage, subscription: string, since: number): Promise<{ succeeded: number; retry: number; failed: number }> {
  const rows = await storage.db
    .selectFrom('notification_attempts as a')
    .innerJoin('notifications as n', 'n.id', 'a.notification_id')
    .select(['a.outcome', 'a.latency_ms'])
    .where('n.subscription_id', '=', subscription)
    .where('a.started_at', '>=', since)
    .execute();
  const counts = { succeeded: 0, retry: 0, failed: 0 };
  for (const row of rows) counts[row.outcome] += 1;
  rows.map((row) => row.latency_ms).sort((a, b) => a - b); // what percentiles would cost
  return counts;
}

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

async function measure(name: string, storage: Storage, total: number): Promise<BenchRow[]> {
  const now = Date.now();
  const fillMs = await fill(storage, total, now);
  process.stderr.write(`  ${name}: ${total.toLocaleString('en-US')} attempts written in ${(fillMs / 1000).toFixed(1)} s\n`);
  const rows: BenchRow[] = [];
  const subscription = subscriptionId(1);
  for (const window of Object.keys(STATS_WINDOWS) as StatsWindow[]) {
    for (let i = 0; i < 20; i++) await getEndpointStats(storage, ACCOUNT, subscription, window, Date.now()); // warm-up
    const times: number[] = [];
    let answer: Awaited<ReturnType<typeof getEndpointStats>> | undefined;
    for (let i = 0; i < 200; i++) {
      const t0 = performance.now();
      answer = await getEndpointStats(storage, ACCOUNT, subscription, window, Date.now());
      times.push(performance.now() - t0);
    }
    times.sort((a, b) => a - b);
    const scans: number[] = [];
    let scanned;
    for (let i = 0; i < 5; i++) {
      const t0 = performance.now();
      scanned = await scanAttemptLog(storage, subscription, Date.parse(answer!.since));
      scans.push(performance.now() - t0);
    }
    scans.sort((a, b) => a - b);
    const agree = JSON.stringify(scanned) === JSON.stringify(answer!.attempts);
    if (!agree) process.stderr.write(`  ${name} ${window}: rollup ${JSON.stringify(answer!.attempts)}, scan ${JSON.stringify(scanned)}\n`);
    const p50 = quantile(times, 0.5);
    rows.push({
      entry: `stats ${name} window=${window} (${total.toLocaleString('en-US')} attempts in the log)`,
      figure: `p50 ${p50.toFixed(2)} ms, p95 ${quantile(times, 0.95).toFixed(2)} ms (${(answer!.attempts.succeeded + answer!.attempts.retry).toLocaleString('en-US')} attempts counted, ${answer!.pending} pending)`,
      baseline: `scan of the attempt log ${quantile(scans, 0.5).toFixed(1)} ms`,
      ratio: quantile(scans, 0.5) / p50,
      goal: 'the rollup and the scan agree on the counts',
      met: agree,
      required: true,
    });
  }
  return rows;
}

export async function benchStats(options: BenchOptions): Promise<BenchRow[]> {
  const total = options.quick ? 100_000 : 1_000_000;
  const rows: BenchRow[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'rewards-stats-'));
  const sqlite = openStorage(`sqlite:${join(dir, 'rewards.db')}`);
  try {
    await migrateToLatest(sqlite.db);
    rows.push(...(await measure('sqlite', sqlite, total)));
  } finally {
    await sqlite.close();
    rmSync(dir, { recursive: true, force: true });
  }
  if (options.postgresUrl) {
    const schema = await createPgSchema(options.postgresUrl);
    const storage = schema.open(4);
    try {
      await migrateToLatest(storage.db);
      rows.push(...(await measure('postgres', storage, total)));
    } finally {
      await storage.close();
      await schema.drop();
    }
  }
  return rows;
}
