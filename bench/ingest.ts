// Ingest benchmark: POST /v2/requests throughput and p99 with durable (fsynced) commits, and the
// end-to-end rate from POST to `processed` with the worker running in the same process.
// `npm run bench -- --only ingest`, or alone: `node --import tsx bench/ingest.ts [--quick]`.
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createPgSchema } from './cluster.js';
import { openStorage, type Storage } from '../src/storage/database.js';
import { describeLoad, load, loadSeconds, SERVER_CORE, startRewards, token, waitForQuietMachine, type BenchOptions, type BenchRow } from './lib.js';

const INGEST_GOAL_RPS = 5_000;

async function insertBenchExperience(storage: Storage): Promise<{ accountId: string; name: string }> {
  const operator = await storage.db.selectFrom('accounts').select('id').where('is_operator', '=', 1).executeTakeFirstOrThrow();
  const id = `exp_bench_${randomBytes(4).toString('hex')}`;
  const now = Date.now();
  await storage.db.insertInto('experiences').values({ id, account_id: operator.id, name: 'bench', title: 'Bench campaign', active: 1, events: '[]', created_at: now, updated_at: now }).execute();
  await storage.db
    .insertInto('prizes')
    .values([
      { experience_id: id, id: 'coupon', position: 0, bucket: 'coupons', title: 'Coupon', description: 'R$10', value: 10, quantity: 1, kind: 'coupon', stock: 1_000_000_000 },
      { experience_id: id, id: 'cashback', position: 1, bucket: 'cashback', title: 'Cashback', description: 'R$5', value: 5, quantity: 1, kind: 'payment', stock: null },
    ])
    .execute();
  return { accountId: operator.id, name: 'bench' };
}

async function countByStatus(storage: Storage): Promise<{ total: number; processed: number }> {
  const rows = await storage.db
    .selectFrom('requests')
    .select(['status', (eb) => eb.fn.countAll().as('n')])
    .groupBy('status')
    .execute();
  const total = rows.reduce((sum, row) => sum + Number(row.n), 0);
  return { total, processed: Number(rows.find((row) => row.status === 'processed')?.n ?? 0) };
}

async function benchOneDatabase(label: string, env: Record<string, string>, storageUrl: (dataDir: string) => string, options: BenchOptions): Promise<BenchRow[]> {
  const duration = loadSeconds(options);
  await waitForQuietMachine({ postgresUrl: options.postgresUrl });
  const service = await startRewards(env, [], SERVER_CORE);
  const storage = openStorage(storageUrl(service.dataDir));
  try {
    const experience = await insertBenchExperience(storage);
    const bearer = await token(service.url, service.operator.client_id, service.operator.client_secret, 'requests:write requests:read');
    const headers = { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' };

    // Baseline from the same process and run: a bearer-verified route that touches no database.
    const me = await load({ url: `${service.url}/v2/me`, headers, duration });

    const started = Date.now();
    const ingest = await load({
      url: `${service.url}/v2/requests`,
      method: 'POST',
      headers,
      body: JSON.stringify({ experience: experience.name, event: 'purchase', data: { orderId: 'o-1' } }),
      duration,
      connections: 64,
    });
    const ingestEnded = Date.now();
    let counts = await countByStatus(storage);
    const processedAtLoadEnd = counts.processed;
    while (counts.processed < counts.total) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      counts = await countByStatus(storage);
    }
    const allProcessed = Date.now();
    const endToEnd = counts.total / ((allProcessed - started) / 1000);
    const workerDuringLoad = processedAtLoadEnd / ((ingestEnded - started) / 1000);
    return [
      {
        entry: `POST /v2/requests, durable [${label}]`,
        figure: describeLoad(ingest),
        baseline: `GET /v2/me ${describeLoad(me)}`,
        ratio: ingest.rps / me.rps,
        goal: `≥ ${INGEST_GOAL_RPS.toLocaleString('en-US')} req/s`,
        met: ingest.rps >= INGEST_GOAL_RPS && ingest.errors + ingest.non2xx === 0,
      },
      {
        entry: `POST → processed, end to end [${label}]`,
        figure: `${Math.round(endToEnd).toLocaleString('en-US')} req/s (${counts.total} requests; worker ${Math.round(workerDuringLoad).toLocaleString('en-US')}/s during load, backlog drained ${((allProcessed - ingestEnded) / 1000).toFixed(1)} s after it)`,
        baseline: `ingest ${Math.round(ingest.rps).toLocaleString('en-US')} req/s`,
        ratio: endToEnd / ingest.rps,
        goal: 'worker keeps up (≥ 0.90 of ingest)',
        met: endToEnd / ingest.rps >= 0.9,
      },
    ];
  } finally {
    await storage.close();
    await service.stop();
  }
}

/** Ingest alone (`serve --role api`, no worker sharing the CPU and the SQLite connection). */
async function benchIngestOnly(options: BenchOptions): Promise<BenchRow> {
  await waitForQuietMachine({ postgresUrl: options.postgresUrl });
  const service = await startRewards({}, ['--role', 'api'], SERVER_CORE);
  const storage = openStorage(`sqlite:${join(service.dataDir, 'rewards.db')}`);
  try {
    const experience = await insertBenchExperience(storage);
    const bearer = await token(service.url, service.operator.client_id, service.operator.client_secret, 'requests:write requests:read');
    const headers = { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' };
    const me = await load({ url: `${service.url}/v2/me`, headers, duration: loadSeconds(options) });
    const ingest = await load({ url: `${service.url}/v2/requests`, method: 'POST', headers, body: JSON.stringify({ experience: experience.name }), duration: loadSeconds(options), connections: 64 });
    return { entry: 'POST /v2/requests, durable, API role only [sqlite]', figure: describeLoad(ingest), baseline: `GET /v2/me ${describeLoad(me)}`, ratio: ingest.rps / me.rps };
  } finally {
    await storage.close();
    await service.stop();
  }
}

/** Entry `ingest`: SQLite always, PostgreSQL when BENCH_POSTGRES_URL is set. */
export async function benchIngest(options: BenchOptions): Promise<BenchRow[]> {
  const rows = await benchOneDatabase('sqlite', {}, (dataDir) => `sqlite:${join(dataDir, 'rewards.db')}`, options);
  rows.push(await benchIngestOnly(options));
  if (options.postgresUrl) {
    const schema = await createPgSchema(options.postgresUrl);
    try {
      rows.push(...(await benchOneDatabase('postgres', { DATABASE_URL: schema.databaseUrl }, () => schema.databaseUrl, options)));
    } finally {
      await schema.drop();
    }
  }
  return rows;
}

if (import.meta.url === pathToFileURL(process.argv[1]!).href) {
  const rows = await benchIngest({ quick: process.argv.includes('--quick'), postgresUrl: process.env.BENCH_POSTGRES_URL });
  for (const row of rows) console.log(`${row.entry}: ${row.figure} | baseline: ${row.baseline} | ratio ${row.ratio.toFixed(2)}${row.goal ? ` | goal ${row.goal} ${row.met ? 'MET' : 'MISSED'}` : ''}`);
  process.exit(0);
}
