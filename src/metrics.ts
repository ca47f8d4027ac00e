import { stat, statfs } from 'node:fs/promises';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { sql } from 'kysely';
import type { Storage } from './storage/database.js';
import { DELIVERIES } from './storage/deliveries.js';

/** Prometheus metrics of one process, exposed at /metrics (docs/notifications.md, "Metrics"). */
export interface Metrics {
  registry: Registry;
  deliveryAttempts: Counter<'event' | 'outcome'>;
  deliveryLatency: Histogram<'event'>;
  queue: QueueMetrics;
  /** Connections the watchdogs closed: the database silent on them (`silent`), or a statement past DATABASE_STATEMENT_TIMEOUT. */
  databaseConnectionsClosed: Counter<'pool' | 'reason'>;
}

/** What the metrics read besides the storage: DATA_DIR's file system, and /health/ready's answer. */
export interface MetricsSources {
  dataDir: string;
  readiness: { check(): Promise<{ ready: boolean }> };
}

/** A scrape answers within this even when the database (or its disk) does not: the gauges read from it are then left out. */
const DATABASE_GAUGE_TIMEOUT_MS = 2_000;

/**
 * Sets a gauge from a read of the database (or of its files, its disk), or leaves it without a
 * value when the read fails or takes longer than DATABASE_GAUGE_TIMEOUT_MS: /metrics keeps
 * answering, with the process's own metrics, while the database does not
 * (`rewards_database_answering` says why the others are gone).
 */
async function fromDatabase(gauge: Gauge<string>, read: () => Promise<void>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('the database did not answer in time')), DATABASE_GAUGE_TIMEOUT_MS)));
  try {
    await Promise.race([read(), timeout]);
  } catch {
    gauge.reset();
  } finally {
    clearTimeout(timer);
  }
}

/**
 * What a job worker does with the queue, per process: enough to tell, while delivery is slow,
 * whether the worker claims too rarely (wake-ups), gets too little per claim (short claims), or
 * loses leases (renewals failing, jobs retaken).
 */
export interface QueueMetrics {
  /** Claim statements by loop, and the jobs they returned. */
  claims: Counter<'loop'>;
  claimedJobs: Counter<'loop'>;
  /** Wake-ups of a loop by what woke it: `local` (this process enqueued), `notify` (LISTEN), `slot` (a delivery slot freed), `poll` (nothing came). */
  wakeups: Counter<'source'>;
  /** Lease renewal statements (heartbeats), the leases they renewed, and those that failed or were skipped. */
  leaseRenewals: Counter<'outcome'>;
  renewedLeases: Counter;
  /** Jobs whose lease another worker had taken when this one came to record them. */
  leasesLost: Counter;
}

/** A file's size, 0 when it does not exist (SQLite's -wal between checkpoints that truncate it). */
async function fileSize(path: string): Promise<number> {
  try {
    return (await stat(path)).size;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw error;
  }
}

export function createMetrics(storage: Pick<Storage, 'db' | 'readDb' | 'answering' | 'file'>, clock: () => number, sources: MetricsSources): Metrics {
  const { db } = storage;
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'rewards_' });
  const deliveryAttempts = new Counter({
    name: 'rewards_webhook_attempts_total',
    help: 'Notification delivery attempts by outcome (succeeded, retry, failed)',
    labelNames: ['event', 'outcome'] as const,
    registers: [registry],
  });
  const deliveryLatency = new Histogram({
    name: 'rewards_webhook_delivery_seconds',
    help: 'Duration of one delivery attempt, connect to last byte',
    labelNames: ['event'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const queue = createQueueMetrics(registry);
  // Queue gauges are read from the database at scrape time, so every process reports the same truth.
  new Gauge({
    name: 'rewards_jobs_pending',
    help: 'Jobs waiting or running, by kind (deliver-notification: the notifications scheduled for an attempt)',
    labelNames: ['kind'] as const,
    registers: [registry],
    async collect() {
      await fromDatabase(this, async () => {
        const rows = await db
          .selectFrom('jobs')
          .select(['kind', sql<number | string>`count(*)`.as('n')])
          .where('state', '=', 'pending')
          .groupBy('kind')
          .execute();
        // Deliveries are their notification rows (storage/deliveries.ts): those scheduled, on the due index.
        const deliveries = await sql<{ n: number | string }>`select count(*) as n from notifications where status = 'pending' and run_at is not null`.execute(db);
        this.reset();
        for (const row of rows) this.set({ kind: row.kind }, Number(row.n));
        this.set({ kind: DELIVERIES }, Number(deliveries.rows[0]?.n ?? 0));
      });
    },
  });
  new Gauge({
    name: 'rewards_jobs_oldest_due_age_seconds',
    help: 'Age of the oldest job that is due and not yet claimed (0 when the worker keeps up)',
    registers: [registry],
    async collect() {
      await fromDatabase(this, async () => {
        const now = clock();
        // The pending jobs are indexed by (kind, run_at): walk the kinds present (a loose index scan,
        // one lookup per kind) and take each kind's oldest due job, instead of reading every job.
        const { rows } = await sql<{ oldest: number | string | null }>`
        with recursive kinds(kind) as (
          select min(kind) from jobs where state = 'pending'
          union all
          select (select min(kind) from jobs where state = 'pending' and kind > kinds.kind) from kinds where kinds.kind is not null
        )
        select min((select min(run_at) from jobs where state = 'pending' and kind = kinds.kind and run_at <= ${now} and locked_by is null)) as oldest
        from kinds where kind is not null`.execute(db);
        const delivery = await sql<{ oldest: number | string | null }>`select min(run_at) as oldest from notifications
        where status = 'pending' and run_at is not null and run_at <= ${now} and (lease_until is null or lease_until <= ${now})`.execute(db);
        const found = [rows[0]?.oldest, delivery.rows[0]?.oldest].filter((at) => at != null).map(Number);
        this.set(found.length === 0 ? 0 : (now - Math.min(...found)) / 1000);
      });
    },
  });
  new Gauge({
    name: 'rewards_notifications_pending',
    help: 'Notifications not yet delivered nor failed',
    registers: [registry],
    async collect() {
      await fromDatabase(this, async () => {
        const row = await db
          .selectFrom('notifications')
          .select(sql<number | string>`count(*)`.as('n'))
          .where('status', '=', 'pending')
          .executeTakeFirst();
        this.set(Number(row?.n ?? 0));
      });
    },
  });
  new Gauge({
    name: 'rewards_endpoint_circuits',
    help: 'Endpoint circuit breakers by state: failing (not yet open), open (new notifications held, probes testing it), draining (closed again, releasing what it held)',
    labelNames: ['state'] as const,
    registers: [registry],
    async collect() {
      await fromDatabase(this, async () => {
        const rows = await db
          .selectFrom('endpoint_circuits')
          .select(['state', sql<number | string>`count(*)`.as('n')])
          .groupBy('state')
          .execute();
        const counts = new Map(rows.map((row) => [row.state, Number(row.n)]));
        for (const state of ['failing', 'open', 'draining'] as const) this.set({ state }, counts.get(state) ?? 0);
      });
    },
  });
  new Gauge({
    name: 'rewards_notifications_held',
    help: 'Notifications the endpoint circuit breakers hold: pending, no attempt made, until their endpoint answers a probe',
    registers: [registry],
    async collect() {
      await fromDatabase(this, async () => {
        // The partial index of held notifications: empty while no circuit holds anything.
        const row = await db
          .selectFrom('notifications')
          .select(sql<number | string>`count(*)`.as('n'))
          .where('held_at', 'is not', null)
          .executeTakeFirst();
        this.set(Number(row?.n ?? 0));
      });
    },
  });
  new Gauge({
    name: 'rewards_database_answering',
    help: "1 while the database answers this process's heartbeat (DATABASE_HEARTBEAT_TIMEOUT), 0 while it is silent",
    registers: [registry],
    collect() {
      this.set(storage.answering() ? 1 : 0);
    },
  });
  new Gauge({
    name: 'rewards_ready',
    help: "1 while this process's /health/ready answers 200 (its database takes writes), 0 while it answers 503",
    registers: [registry],
    async collect() {
      this.set((await sources.readiness.check()).ready ? 1 : 0);
    },
  });
  new Gauge({
    name: 'rewards_data_dir_available_bytes',
    help: 'Bytes free to the service on the file system of DATA_DIR (where the SQLite database is by default); no value while DATA_DIR does not exist',
    registers: [registry],
    async collect() {
      await fromDatabase(this, async () => {
        const room = await statfs(sources.dataDir);
        this.set(room.bavail * room.bsize);
      });
    },
  });
  const sqliteFile = storage.file;
  new Gauge({
    name: 'rewards_database_size_bytes',
    help: 'Size of the database: SQLite, its file and its -wal; PostgreSQL, pg_database_size of the current database',
    registers: [registry],
    async collect() {
      await fromDatabase(this, async () => {
        // A file: SQLite. None: PostgreSQL (an in-memory SQLite database refuses the statement, and has no value).
        if (sqliteFile) {
          const sizes = await Promise.all([fileSize(sqliteFile), fileSize(`${sqliteFile}-wal`)]);
          this.set(sizes[0] + sizes[1]);
        } else {
          const { rows } = await sql<{ size: number | string }>`select pg_database_size(current_database()) as size`.execute(db);
          this.set(Number(rows[0]?.size ?? 0));
        }
      });
    },
  });
  if (storage.readDb !== db) {
    new Gauge({
      name: 'rewards_database_read_lag_seconds',
      help: 'How far the replica of DATABASE_READ_URL is behind its primary (0 when it has replayed everything it received)',
      registers: [registry],
      async collect() {
        await fromDatabase(this, async () => {
          const { rows } = await sql<{ lag: number | string | null }>`select case when pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() then 0
              else extract(epoch from now() - pg_last_xact_replay_timestamp()) end as lag`.execute(storage.readDb);
          this.set(Number(rows[0]?.lag ?? 0));
        });
      },
    });
  }
  const databaseConnectionsClosed = new Counter({
    name: 'rewards_database_connections_closed_total',
    help: 'Database connections the watchdog closed, by pool (primary, listen, read) and reason (silent: no answer to the heartbeat; statement-timeout)',
    labelNames: ['pool', 'reason'] as const,
    registers: [registry],
  });
  return { registry, deliveryAttempts, deliveryLatency, queue, databaseConnectionsClosed };
}

/** The job worker's counters, registered in `registry` (a throw-away one where nobody scrapes). */
export function createQueueMetrics(registry: Registry = new Registry()): QueueMetrics {
  const counter = <L extends string>(name: string, help: string, labelNames: readonly L[] = []) => new Counter<L>({ name, help, labelNames, registers: [registry] });
  return {
    claims: counter('rewards_job_claims_total', 'Claim statements of this process, by worker loop', ['loop'] as const),
    claimedJobs: counter('rewards_job_claimed_total', 'Jobs those claims returned, by worker loop', ['loop'] as const),
    wakeups: counter('rewards_job_wakeups_total', 'Wake-ups of the worker loops, by source (local, notify, slot, poll)', ['source'] as const),
    leaseRenewals: counter('rewards_job_lease_renewals_total', 'Lease renewal statements (heartbeats), by outcome (ok, failed, skipped: the previous one was still running)', ['outcome'] as const),
    renewedLeases: counter('rewards_job_leases_renewed_total', 'Job leases renewed by the heartbeats'),
    leasesLost: counter('rewards_job_leases_lost_total', 'Jobs found taken over by another worker when their outcome was recorded'),
  };
}
