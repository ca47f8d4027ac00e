import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { sql, type RawBuilder } from 'kysely';
import { recoverNotifications, RECOVERY_BATCH_SIZE } from '../src/services/recover-notifications.js';
import { createAccount } from '../src/services/accounts.js';
import { openStorage, type Storage } from '../src/storage/database.js';
import { migrateToLatest } from '../src/storage/migrations/index.js';
import { JobSignals } from '../src/storage/queue/index.js';
import { openSqliteDatabase } from '../src/storage/sqlite-driver.js';
import { createPgSchema, fmt } from './cluster.js';
import type { BenchOptions, BenchRow } from './lib.js';

/**
 * Entry "recovery": POST /subscriptions/{id}/recover over a large outage, in process (the
 * service the route calls, `recoverNotifications`, with its batches of 1,000).
 * A fresh database holds TARGET failed notifications of one subscription, completed over the last
 * 24 h (three to a millisecond, so keyset ties straddle pages), plus noise the call must not touch: 20,000
 * failed notifications of another subscription, 10,000 of this one failed three days ago (outside
 * the window), 10,000 delivered ones and 1,000 failed test sends. Measured: the call's wall time
 * (everything back to pending and due, committed; no worker runs,
 * nothing is delivered) and the process's peak RSS above its RSS just before the call (sampled
 * every 20 ms, after a full GC), with what the JavaScript heap still holds after the call and
 * another full GC. Checked: the count answered, each due again, the noise untouched.
 * Baselines, the same call on the same noise: for the time, 1,000 failed notifications (ratio:
 * time per notification, ≈ 1 or below when every page costs the same); for the memory, a tenth of
 * them (ratio ≈ 1 when memory does not grow with the count; under 16 MiB counts as 16 MiB). Each
 * measurement on a fresh database, in this order, in this process. SQLite, and PostgreSQL when
 * BENCH_POSTGRES_URL is set. --quick: 10,000 instead of 100,000.
 */

const HOUR = 3_600_000;
const SMALL = 1000;
const NOISE = { otherSubscription: 20_000, outsideWindow: 10_000, succeeded: 10_000, testSends: 1_000 };

interface Backend {
  name: 'sqlite' | 'postgres';
  create(): Promise<Database>;
}

interface Database {
  storage: Storage;
  /** Bulk-loads the notifications (and failed jobs) straight into the tables. */
  load(rows: LoadPlan): Promise<void>;
  cleanup(): Promise<void>;
}

interface LoadPlan {
  accountId: string;
  target: string;
  other: string;
  failed: number;
  now: number;
}

/** Every notification of the plan as [id, subscription_id, status, completed_at, test]; one loop for both loaders. */
function* planRows(plan: LoadPlan): Generator<[string, string, string, number, number]> {
  const dayStart = plan.now - 24 * HOUR;
  const spread = (i: number, count: number) => dayStart + Math.floor((Math.floor(i / 3) * 3 * (23 * HOUR)) / count);
  for (let i = 0; i < plan.failed; i++) yield [`msg_rec_${i}`, plan.target, 'failed', spread(i, plan.failed), 0];
  for (let i = 0; i < NOISE.otherSubscription; i++) yield [`msg_oth_${i}`, plan.other, 'failed', spread(i, NOISE.otherSubscription), 0];
  for (let i = 0; i < NOISE.outsideWindow; i++) yield [`msg_old_${i}`, plan.target, 'failed', plan.now - 72 * HOUR + i, 0];
  for (let i = 0; i < NOISE.succeeded; i++) yield [`msg_ok_${i}`, plan.target, 'succeeded', spread(i, NOISE.succeeded), 0];
  for (let i = 0; i < NOISE.testSends; i++) yield [`msg_tst_${i}`, plan.target, 'failed', spread(i, NOISE.testSends), 1];
}

function sqliteBackend(): Backend {
  return {
    name: 'sqlite',
    async create() {
      const dir = mkdtempSync(join(tmpdir(), 'rewards-recovery-'));
      const file = join(dir, 'rewards.db');
      const storage = openStorage(`sqlite:${file}`);
      await migrateToLatest(storage.db);
      return {
        storage,
        async load(plan) {
          // One transaction of prepared 500-row inserts on a loader connection with synchronous=OFF.
          const db = openSqliteDatabase(file);
          db.pragma('busy_timeout = 5000');
          db.pragma('synchronous = OFF');
          const CHUNK = 500;
          const notification = '(?, ?, ?, ?, ?, ?, ?, ?, 2, 500, ?, ?, ?, ?, ?)';
          const insertNotifications = (n: number) =>
            db.prepare(
              `insert into notifications (id, account_id, request_id, subscription_id, event, url, payload, status, attempt_count, last_status_code, last_error, created_at, updated_at, completed_at, test)
               values ${Array(n).fill(notification).join(', ')}`,
            );
          const full = insertNotifications(CHUNK);
          db.transaction(() => {
            let values: unknown[] = [];
            let n = 0;
            const flush = () => {
              if (n > 0) (n === CHUNK ? full : insertNotifications(n)).run(...values);
              values = [];
              n = 0;
            };
            for (const [id, subscriptionId, status, completedAt, test] of planRows(plan)) {
              const requestId = `req_${id.slice(4)}`;
              values.push(
                id,
                plan.accountId,
                requestId,
                subscriptionId,
                'registered-requests',
                'http://127.0.0.1:9/hook',
                JSON.stringify({ id: requestId, rewardValue: 10 }),
                status,
                status === 'failed' ? 'HTTP 500' : null,
                completedAt - 60_000,
                completedAt,
                completedAt,
                test,
              );
              n += 1;
              if (n === CHUNK) flush();
            }
            flush();
          })();
          db.exec('analyze');
          db.close();
        },
        async cleanup() {
          await storage.close();
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
      const schema = await createPgSchema(url);
      const storage = schema.open(4);
      await migrateToLatest(storage.db);
      return {
        storage,
        async load(plan) {
          // Rows as JSON arrays of 20,000 per statement (generate_series would need the plan's rules twice).
          let batch: unknown[] = [];
          const flush = async () => {
            if (batch.length === 0) return;
            await sql`insert into notifications (id, account_id, request_id, subscription_id, event, url, payload, status, attempt_count, last_status_code, last_error, created_at, updated_at, completed_at, test)
                select e ->> 0, ${plan.accountId}, 'req_' || substr(e ->> 0, 5), e ->> 1, 'registered-requests', 'http://127.0.0.1:9/hook',
                       json_build_object('id', 'req_' || substr(e ->> 0, 5), 'rewardValue', 10)::text, e ->> 2, 2, 500,
                       case when e ->> 2 = 'failed' then 'HTTP 500' end, (e ->> 3)::bigint - 60000, (e ->> 3)::bigint, (e ->> 3)::bigint, (e ->> 4)::int
                from jsonb_array_elements(${JSON.stringify(batch)}::jsonb) e`.execute(storage.db);
            batch = [];
          };
          for (const row of planRows(plan)) {
            batch.push(row);
            if (batch.length === 20_000) await flush();
          }
          await flush();
          await sql`analyze notifications`.execute(storage.db);
        },
        async cleanup() {
          await storage.close();
          await schema.drop();
        },
      };
    },
  };
}

interface Measured {
  recovered: number;
  ms: number;
  rssBeforeMiB: number;
  peakRssIncreaseMiB: number;
  /** JavaScript heap after a full collection, after the call minus before it. */
  heapKeptMiB: number;
  loadMs: number;
}

const MiB = 1024 * 1024;

/** `gc()` without starting node with --expose-gc: the flag set at run time, the function from a fresh context. */
function collectGarbage(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

async function measure(backend: Backend, failed: number): Promise<Measured> {
  const database = await backend.create();
  const { db } = database.storage;
  try {
    const now = Date.now();
    const account = await createAccount(db, `recovery-bench-${failed}`);
    const subscription = (id: string) => ({
      id,
      account_id: account.id,
      event: 'registered-request',
      description: '',
      active: 1,
      experiences: '[]',
      callback_url: 'http://127.0.0.1:9/hook',
      callback_authorization_encrypted: null,
      callback_custom_headers: '{}',
      created_at: now - 48 * HOUR,
      updated_at: now - 48 * HOUR,
      disabled_reason: null,
      disabled_at: null,
      rate_limit: null,
    });
    await db
      .insertInto('subscriptions')
      .values([subscription('sub_recovery_target'), subscription('sub_recovery_other')])
      .execute();
    process.stderr.write(`  ${backend.name}: loading ${fmt(failed)} failed notifications and ${fmt(Object.values(NOISE).reduce((a, b) => a + b, 0))} of noise…\n`);
    const loadStarted = performance.now();
    await database.load({ accountId: account.id, target: 'sub_recovery_target', other: 'sub_recovery_other', failed, now });
    const loadMs = performance.now() - loadStarted;

    const ctx = { db, signals: new JobSignals(), clock: Date.now };
    const since = new Date(now - 25 * HOUR).toISOString();
    // Warms the statements and the connection on a window with nothing in it.
    await recoverNotifications(ctx, account.id, 'sub_recovery_target', { since: new Date(now - 50 * HOUR).toISOString(), until: new Date(now - 49 * HOUR).toISOString() });

    // A full collection first, so every size starts from the same heap state (not the loader's garbage).
    collectGarbage();
    const heapBefore = process.memoryUsage().heapUsed;
    const rssBefore = process.memoryUsage().rss;
    let peak = rssBefore;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss);
    }, 20);
    const started = performance.now();
    const recovered = await recoverNotifications(ctx, account.id, 'sub_recovery_target', { since });
    const ms = performance.now() - started;
    clearInterval(sampler);
    peak = Math.max(peak, process.memoryUsage().rss);
    // What the call left behind: the heap after another full collection (the peak is mostly garbage not yet collected).
    collectGarbage();
    const heapKeptMiB = (process.memoryUsage().heapUsed - heapBefore) / MiB;

    // Checks: everything taken once and due again, the noise untouched.
    const count = async (query: RawBuilder<{ n: number | string }>) => Number((await query.execute(db)).rows[0]!.n);
    const pending = await count(sql`select count(*) as n from notifications where subscription_id = 'sub_recovery_target' and status = 'pending'`);
    const due = await count(sql`select count(*) as n from notifications where subscription_id = 'sub_recovery_target' and status = 'pending' and run_at is not null`);
    const stillFailed = await count(sql`select count(*) as n from notifications where status = 'failed'`);
    const untouched = NOISE.otherSubscription + NOISE.outsideWindow + NOISE.testSends;
    if (recovered !== failed || pending !== failed || due !== failed || stillFailed !== untouched) {
      throw new Error(`recovery [${backend.name}]: answered ${recovered}, ${pending} pending, ${due} due, ${stillFailed} failed (expected ${failed}, ${failed}, ${failed}, ${untouched})`);
    }
    return { recovered, ms, rssBeforeMiB: rssBefore / MiB, peakRssIncreaseMiB: (peak - rssBefore) / MiB, heapKeptMiB, loadMs };
  } finally {
    await database.cleanup();
  }
}

export async function benchRecovery(options: BenchOptions): Promise<BenchRow[]> {
  const large = options.quick ? 10_000 : 100_000;
  const quickNote = options.quick ? ' (--quick: 10,000, not 100,000)' : '';
  const backends = [sqliteBackend(), ...(options.postgresUrl ? [postgresBackend(options.postgresUrl)] : [])];
  const rows: BenchRow[] = [];
  for (const backend of backends) {
    const small = await measure(backend, SMALL);
    const tenth = await measure(backend, large / 10);
    const big = await measure(backend, large);
    const rate = (m: Measured) => (m.recovered / m.ms) * 1000;
    rows.push(
      {
        entry: `recovery: ${fmt(large)} failed notifications back to pending and due${quickNote} [${backend.name}]`,
        figure: `${(big.ms / 1000).toFixed(2)} s (${fmt(rate(big))}/s, ${Math.ceil(large / RECOVERY_BATCH_SIZE)} transactions; loaded in ${(big.loadMs / 1000).toFixed(1)} s)`,
        baseline: `${fmt(SMALL)}: ${(small.ms / 1000).toFixed(3)} s (${fmt(rate(small))}/s)`,
        // Time per notification, large over small: ≈ 1 when the keyset pages cost the same all the way.
        ratio: big.ms / big.recovered / (small.ms / small.recovered),
      },
      {
        entry: `recovery: peak RSS increase during the call, ${fmt(large)}${quickNote} [${backend.name}]`,
        figure: `+${big.peakRssIncreaseMiB.toFixed(1)} MiB (process at ${big.rssBeforeMiB.toFixed(0)} MiB before; heap kept after a full GC ${big.heapKeptMiB.toFixed(1)} MiB)`,
        baseline: `${fmt(large / 10)}: +${tenth.peakRssIncreaseMiB.toFixed(1)} MiB (heap kept ${tenth.heapKeptMiB.toFixed(1)} MiB)`,
        // Ten times the notifications: ≈ 1 when memory does not grow with the count. Increases under
        // 16 MiB count as 16 MiB: V8 grows its young generation that far under any high allocation rate.
        ratio: Math.max(big.peakRssIncreaseMiB, 16) / Math.max(tenth.peakRssIncreaseMiB, 16),
      },
    );
  }
  return rows;
}
