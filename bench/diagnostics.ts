// What the service and PostgreSQL do while a measurement runs, so a slow run explains itself:
// the worker processes' queue counters (/metrics on METRICS_PORT) and PostgreSQL's sessions
// (pg_stat_activity wait events, ungranted locks), sampled during the measurement.
import pg from 'pg';

const QUEUE_COUNTERS = {
  claims: 'rewards_job_claims_total',
  claimed: 'rewards_job_claimed_total',
  wakeups: 'rewards_job_wakeups_total',
  renewals: 'rewards_job_lease_renewals_total',
  lost: 'rewards_job_leases_lost_total',
  attempts: 'rewards_webhook_attempts_total',
} as const;

type Counters = Record<string, number>;

/** Sums of the queue counters of one process, keyed `name` and `name{label=value}` for each label value seen. */
async function scrape(metricsUrl: string): Promise<Counters> {
  const text = await (await fetch(metricsUrl)).text();
  const sums: Counters = {};
  for (const line of text.split('\n')) {
    const match = /^(rewards_[a-z_]+)(?:\{([^}]*)\})? (\S+)$/.exec(line);
    if (!match || !Object.values(QUEUE_COUNTERS).includes(match[1] as never)) continue;
    const value = Number(match[3]);
    sums[match[1]!] = (sums[match[1]!] ?? 0) + value;
    for (const pair of match[2]?.matchAll(/(source|outcome)="([^"]*)"/g) ?? []) {
      const key = `${match[1]}{${pair[2]}}`;
      sums[key] = (sums[key] ?? 0) + value;
    }
  }
  return sums;
}

export interface Diagnostics {
  /** Stops sampling; returns one line: per worker per second, then PostgreSQL's share of time per wait. */
  stop(): Promise<string>;
}

/** Starts sampling `metricsUrls` (one per worker process) and, with `postgresUrl`, PostgreSQL. */
export async function sampleDiagnostics(metricsUrls: string[], postgresUrl: string | undefined): Promise<Diagnostics> {
  const started = Date.now();
  const before = await Promise.all(metricsUrls.map(scrape));
  const waits = new Map<string, number>();
  let samples = 0;
  let lockWaits = 0;
  let maxLockWaits = 0;
  let stopping = false;
  const client = postgresUrl ? new pg.Client({ connectionString: postgresUrl }) : undefined;
  await client?.connect();
  const sampler = (async () => {
    while (client && !stopping) {
      const { rows } = await client.query<{ wait: string; n: string }>(
        `select coalesce(wait_event_type || '/' || wait_event, 'CPU') as wait, count(*) as n from pg_stat_activity
          where datname = current_database() and pid <> pg_backend_pid() and state not in ('idle') group by 1`,
      );
      const locks = Number((await client.query<{ n: string }>('select count(*) as n from pg_locks where not granted')).rows[0]!.n);
      samples += 1;
      lockWaits += locks;
      maxLockWaits = Math.max(maxLockWaits, locks);
      for (const row of rows) waits.set(row.wait, (waits.get(row.wait) ?? 0) + Number(row.n));
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();
  return {
    async stop() {
      stopping = true;
      await sampler;
      await client?.end();
      const seconds = (Date.now() - started) / 1000;
      const after = await Promise.all(metricsUrls.map(scrape));
      const rate = (name: string) => after.reduce((sum, counters, i) => sum + (counters[name] ?? 0) - (before[i]![name] ?? 0), 0) / seconds / metricsUrls.length;
      const claims = rate(QUEUE_COUNTERS.claims);
      const worker =
        `per worker per s: attempts ${rate(QUEUE_COUNTERS.attempts).toFixed(0)}, claims ${claims.toFixed(1)} (${(rate(QUEUE_COUNTERS.claimed) / Math.max(claims, 1e-9)).toFixed(0)} jobs each), ` +
        `wake-ups slot ${rate(`${QUEUE_COUNTERS.wakeups}{slot}`).toFixed(0)} local ${rate(`${QUEUE_COUNTERS.wakeups}{local}`).toFixed(1)} notify ${rate(`${QUEUE_COUNTERS.wakeups}{notify}`).toFixed(1)} poll ${rate(`${QUEUE_COUNTERS.wakeups}{poll}`).toFixed(1)}, ` +
        `renewals ${rate(`${QUEUE_COUNTERS.renewals}{ok}`).toFixed(2)} (failed ${rate(`${QUEUE_COUNTERS.renewals}{failed}`).toFixed(2)}, skipped ${rate(`${QUEUE_COUNTERS.renewals}{skipped}`).toFixed(2)}), leases lost ${rate(QUEUE_COUNTERS.lost).toFixed(2)}`;
      if (!client || samples === 0) return worker;
      const total = [...waits.values()].reduce((sum, n) => sum + n, 0);
      const top = [...waits]
        .sort((a, b) => b[1] - a[1])
        .slice(0, 4)
        .map(([wait, n]) => `${wait} ${Math.round((100 * n) / total)} %`)
        .join(', ');
      return `${worker} | PostgreSQL: ${(total / samples).toFixed(1)} busy sessions (${top || 'none'}), ungranted locks ${(lockWaits / samples).toFixed(1)} (max ${maxLockWaits})`;
    },
  };
}
