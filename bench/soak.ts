import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { createPgSchema } from './cluster.js';
import { percentile, setUpTenant } from './delivery.js';
import { freePort, pacedLoad, ROOT_DIR, startProcess, startRewards, type BenchOptions, type BenchRow } from './lib.js';

/**
 * Entry `soak` (only when named: `npm run bench -- --only soak`; BENCH_SOAK_MINUTES, default 30;
 * 2 with --quick): the full path at a steady rate on PostgreSQL for half an hour. Requests are sent
 * open-loop at BENCH_SOAK_RATE requests/s (default 500) to one `rewards serve` (API and worker),
 * each registered and processed, each producing a `registered-requests` and a
 * `processed-requests` notification to one receiver URL (so the order rule is on the path too):
 * 1,000 notifications/s, 1.8 M in 30 minutes. NOTIFICATION_RETENTION is 5 minutes, so the worker's
 * retention purge runs (every ten minutes) during the soak as it would in production.
 *
 * Every minute it prints: requests accepted, notifications delivered, latency from the
 * notification's creation (registration or processing transaction) to its arrival (p50 / p99),
 * the service's RSS, and the live and dead rows of the churning tables. The suite fails if a
 * request was refused, or if at the end any notification is missing at the receiver (nothing lost).
 */

interface Minute {
  minute: number;
  accepted: number;
  refused: number;
  delivered: number;
  p50: number;
  p99: number;
  rssMiB: number;
  tables: Record<string, { live: number; dead: number }>;
  pendingJobs: number;
  /** Partitions of the delivery log (the periods, the rows from before migration 017, the default). */
  partitions: number;
}

const TABLES = ['jobs', 'notifications', 'notification_attempts', 'requests'];

function rssMiB(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) / 1024 : NaN;
}

export async function benchSoak(options: BenchOptions): Promise<BenchRow[]> {
  if (!options.postgresUrl) return [{ entry: 'soak', figure: 'skipped: set BENCH_POSTGRES_URL', baseline: '', ratio: NaN }];
  const minutes = options.quick ? 2 : Number(process.env.BENCH_SOAK_MINUTES ?? 30);
  const rate = Number(process.env.BENCH_SOAK_RATE ?? 500);
  const schema = await createPgSchema(options.postgresUrl);
  const receiver = await startProcess(['--import', 'tsx', join(ROOT_DIR, 'bench/servers/receiver.ts')], {}, '/stats', await freePort());
  const service = await startRewards({ DATABASE_URL: schema.databaseUrl, LOG_LEVEL: 'warn', NOTIFICATION_RETENTION: '5m' });
  const rows: Minute[] = [];
  let totalAccepted = 0;
  let totalDelivered = 0;
  let notDelivered: number;
  try {
    const { bearer } = await setUpTenant(service, receiver.url, ['registered-request', 'processed-request']);

    const db = new pg.Client({ connectionString: schema.databaseUrl });
    await db.connect();
    try {
      for (let minute = 1; minute <= minutes; minute++) {
        const load = await pacedLoad({
          url: `${service.url}/v2/requests`,
          method: 'POST',
          headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' },
          body: JSON.stringify({ experience: 'bench', event: 'purchase' }),
          rate,
          seconds: 60,
        });
        // What arrived during this minute, then a fresh count for the next one.
        const { arrivals } = (await (await fetch(`${receiver.url}/take`)).json()) as { arrivals: [string, number][] };
        const created = await db.query<{ id: string; created_at: string }>('select id, created_at from notifications where id = any($1::text[])', [arrivals.map(([id]) => id)]);
        const createdAt = new Map(created.rows.map((row) => [row.id, Number(row.created_at)]));
        const latencies = arrivals.flatMap(([id, at]) => (createdAt.has(id) ? [at - createdAt.get(id)!] : [])).sort((a, b) => a - b);
        // A partition counts for its table (the delivery log is partitioned by period).
        const stats = await db.query<{ relname: string; live: string; dead: string }>(
          `select coalesce(p.relname, c.relname) as relname, sum(s.n_live_tup) as live, sum(s.n_dead_tup) as dead
             from pg_stat_user_tables s join pg_class c on c.oid = s.relid left join pg_inherits i on i.inhrelid = s.relid left join pg_class p on p.oid = i.inhparent
            where s.schemaname = current_schema() group by 1`,
        );
        const partitions = await db.query<{ n: string }>("select count(*) as n from pg_inherits where inhparent = 'notifications'::regclass");
        const pending = await db.query<{ n: string }>("select (select count(*) from jobs where state = 'pending') + (select count(*) from notifications where status = 'pending') as n");
        const row: Minute = {
          minute,
          accepted: load.ok,
          refused: load.failed,
          delivered: arrivals.length,
          p50: percentile(latencies, 50),
          p99: percentile(latencies, 99),
          rssMiB: rssMiB(service.process.pid!),
          tables: Object.fromEntries(stats.rows.filter((r) => TABLES.includes(r.relname)).map((r) => [r.relname, { live: Number(r.live), dead: Number(r.dead) }])),
          pendingJobs: Number(pending.rows[0]!.n),
          partitions: Number(partitions.rows[0]!.n),
        };
        rows.push(row);
        totalAccepted += load.ok;
        totalDelivered += arrivals.length;
        const t = (name: string) => `${row.tables[name]?.live ?? 0}/${row.tables[name]?.dead ?? 0}`;
        process.stderr.write(
          `  soak minute ${minute}: ${load.ok} accepted (${load.failed} refused), ${arrivals.length} delivered, p50 ${row.p50.toFixed(1)} ms, p99 ${row.p99.toFixed(1)} ms, ` +
            `RSS ${row.rssMiB.toFixed(0)} MiB, pending work (jobs and notifications) ${row.pendingJobs}, live/dead jobs ${t('jobs')} notifications ${t('notifications')} attempts ${t('notification_attempts')}, ${row.partitions} partitions\n`,
        );
      }
      // Drain: everything accepted must arrive.
      const until = Date.now() + 120_000;
      for (;;) {
        const stats = (await (await fetch(`${receiver.url}/stats`)).json()) as { count: number };
        if (totalDelivered + stats.count >= 2 * totalAccepted || Date.now() > until) {
          totalDelivered += stats.count;
          break;
        }
        await sleep(500);
      }
      // Nothing lost: every notification written ended delivered (retention deleted only delivered ones).
      const left = await db.query<{ status: string; n: string }>("select status, count(*) as n from notifications where status <> 'succeeded' group by status");
      notDelivered = left.rows.reduce((sum, row) => sum + Number(row.n), 0);
      if (notDelivered > 0) process.stderr.write(`  soak: not delivered: ${JSON.stringify(left.rows)}\n`);
    } finally {
      await db.end();
    }
  } finally {
    await service.stop();
    await receiver.stop();
    await schema.drop();
  }

  const first = rows.slice(0, Math.min(5, rows.length));
  const last = rows.slice(-Math.min(5, rows.length));
  const mean = (list: Minute[], pick: (m: Minute) => number) => list.reduce((sum, m) => sum + pick(m), 0) / list.length;
  const table = rows
    .map(
      (m) =>
        `| ${m.minute} | ${m.accepted} | ${m.delivered} | ${m.p50.toFixed(1)} | ${m.p99.toFixed(1)} | ${m.rssMiB.toFixed(0)} | ${m.pendingJobs} | ${m.tables.jobs?.dead ?? 0} | ${m.tables.notifications?.live ?? 0} / ${m.tables.notifications?.dead ?? 0} |`,
    )
    .join('\n');
  process.stderr.write(
    `\n| minute | requests accepted | notifications delivered | p50 ms | p99 ms | RSS MiB | pending jobs and notifications | dead job rows | notifications live / dead |\n|---|---|---|---|---|---|---|---|---|\n${table}\n\n`,
  );
  const refused = rows.reduce((sum, m) => sum + m.refused, 0);
  return [
    {
      entry: `soak: ${minutes} min at ${rate} requests/s, ${2 * rate} notifications/s [postgres]`,
      figure: `${totalAccepted.toLocaleString('en-US')} requests accepted (${refused} refused), ${totalDelivered.toLocaleString('en-US')} notifications delivered of ${(2 * totalAccepted).toLocaleString('en-US')}, ${notDelivered} not delivered in the database`,
      baseline: `first 5 min: ${Math.round(mean(first, (m) => m.delivered / 60))}/s, p99 ${mean(first, (m) => m.p99).toFixed(1)} ms, RSS ${mean(first, (m) => m.rssMiB).toFixed(0)} MiB; last 5 min: ${Math.round(mean(last, (m) => m.delivered / 60))}/s, p99 ${mean(last, (m) => m.p99).toFixed(1)} ms, RSS ${mean(last, (m) => m.rssMiB).toFixed(0)} MiB`,
      ratio: mean(last, (m) => m.delivered) / mean(first, (m) => m.delivered),
      goal: 'nothing lost or refused',
      met: refused === 0 && totalDelivered >= 2 * totalAccepted && notDelivered === 0,
      required: true,
    },
  ];
}
