// A peer queue's worker process for `npm run bench -- --only peers` (bench/peers.ts): the job
// handler a team would write on graphile-worker or pg-boss instead of this service, each at its
// documented best settings (stated in PEER_SETTINGS). One job per notification; the handler POSTs
// the job's body signed with the official `standardwebhooks` package through an undici Agent of 8
// keep-alive connections (the service's per-host limit) and completes; with PEER=graphile-worker+log
// it also writes one attempt-log row per delivery, as a user wanting a delivery log would.
// Env: PEER, DATABASE_URL, PEER_SCHEMA, RECEIVER_URL, SIGNING_SECRET, PORT (readiness: GET /ready).
import { createServer } from 'node:http';
import { Webhook } from 'standardwebhooks';
import { Agent, request } from 'undici';

export const PEER_SETTINGS: Record<string, string> = {
  'graphile-worker': 'concurrency 32, localQueue.size 64, completeJobBatchDelay 0, failJobBatchDelay 0, LISTEN/NOTIFY (its default), pollInterval 2 s',
  'graphile-worker+log': 'the same, writing one attempt-log row per delivery',
  'pg-boss': '8 workers × batchSize 64, burstWhenBatchFull, useListenNotify and queue notify on, pollingIntervalSeconds 0.5',
};

export interface PeerJob {
  /** The webhook-id, the key the receiver records arrivals by. */
  id: string;
  body: string;
}

const PER_HOST = 8;

async function main(): Promise<void> {
  const peer = process.env.PEER!;
  const connectionString = process.env.DATABASE_URL!;
  const schema = process.env.PEER_SCHEMA!;
  const target = `${process.env.RECEIVER_URL!}/hook`;
  const webhook = new Webhook(process.env.SIGNING_SECRET!);
  const agent = new Agent({ connections: PER_HOST, keepAliveTimeout: 10_000 });

  /** The unit of work every system does: a signed POST, answered 2xx. Returns status and latency. */
  const deliver = async (job: PeerJob): Promise<{ status: number; ms: number }> => {
    const started = performance.now();
    const signature = webhook.sign(job.id, new Date(), job.body);
    const response = await request(target, {
      method: 'POST',
      dispatcher: agent,
      body: job.body,
      headers: { 'content-type': 'application/json', 'webhook-id': job.id, 'webhook-timestamp': String(Math.floor(Date.now() / 1000)), 'webhook-signature': signature },
    });
    await response.body.dump();
    if (response.statusCode >= 300) throw new Error(`HTTP ${response.statusCode}`);
    return { status: response.statusCode, ms: performance.now() - started };
  };

  let stop: () => Promise<void>;
  if (peer.startsWith('graphile-worker')) {
    const { run } = await import('graphile-worker');
    const withLog = peer === 'graphile-worker+log';
    const runner = await run({
      connectionString,
      schema,
      concurrency: 32,
      noHandleSignals: true,
      pollInterval: 2000,
      preset: { worker: { localQueue: { size: 64 }, completeJobBatchDelay: 0, failJobBatchDelay: 0 } },
      taskList: {
        deliver: async (payload, helpers) => {
          const job = payload as PeerJob;
          const { status, ms } = await deliver(job);
          if (withLog) {
            await helpers.query(`insert into ${schema}.attempts (job_id, webhook_id, status_code, latency_ms, at) values ($1, $2, $3, $4, now())`, [helpers.job.id, job.id, status, Math.round(ms)]);
          }
        },
      },
    });
    stop = () => runner.stop();
  } else if (peer === 'pg-boss') {
    const { PgBoss } = await import('pg-boss');
    const boss = new PgBoss({ connectionString, schema, max: 10, useListenNotify: true });
    boss.on('error', (error: Error) => process.stderr.write(`pg-boss: ${error.message}\n`));
    await boss.start();
    for (let i = 0; i < 8; i++) {
      await boss.work<PeerJob>('deliver', { batchSize: 64, pollingIntervalSeconds: 0.5, notifyPollingIntervalSeconds: 0.5, burstWhenBatchFull: true }, async (jobs) => {
        await Promise.all(jobs.map((job) => deliver(job.data)));
      });
    }
    stop = () => boss.stop({ graceful: true, timeout: 10_000 });
  } else throw new Error(`unknown PEER ${peer}`);

  const server = createServer((_request, response) => response.writeHead(200).end('ok'));
  server.listen(Number(process.env.PORT), '127.0.0.1');
  process.on('SIGTERM', () => {
    void (async () => {
      await stop();
      await agent.close();
      server.close();
      process.exit(0);
    })();
  });
}

if (process.env.PEER) await main();
