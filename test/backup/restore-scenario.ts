import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { openStorage } from '../../src/storage/database.js';
import { cliTenant, clientToken, startChildService, type ChildService } from '../support/child-service.js';
import { eventually } from '../support/notifications.js';
import { startHttpReceiver, type Receiver } from '../support/receivers.js';
import { api } from '../support/test-app.js';

/**
 * What test/backup/*.test.ts do on each database (docs/deployment.md, "Backups and restore"): the
 * real service takes a stream of reward requests while one of its receivers fails, a backup is
 * taken meanwhile, the service is stopped, the backup restored, and the service started on it:
 * - every request answered 202 before the backup began is in the restored database;
 * - every notification pending in it (its receiver answered 503 until then) arrives after the
 *   restore, with the `webhook-id` it had: the id in the restored delivery log, which the
 *   receiver had already seen on the failed attempts made before the backup;
 * - every request answered 202 before the backup began ends with both its notifications delivered.
 */

/** Short retries, so that what was pending is tried again soon after the restore. */
export const SCENARIO_ENV = {
  CALLBACK_ALLOW_PRIVATE_NETWORKS: 'true',
  RETRY_INTERVAL: '1s',
  RETRY_MAX_ATTEMPTS: '100',
  // Off: an open circuit would hold the failing receiver's deliveries for its probes instead.
  CIRCUIT_BREAKER_FAILURES: '0',
  // A delivery in flight when the backup was taken is leased in it: retaken 3 s after the restore.
  JOB_LEASE: '3s',
  LOG_LEVEL: 'warn',
};

const RATE_PER_SECOND = 25;
const BIN = new URL('../../bin/rewards.js', import.meta.url).pathname;

/** One call the receiver got, and what it answered. */
interface Delivery {
  webhookId: string;
  event: string;
  requestId: string;
  status: number;
}

interface Sent {
  sentAt: number;
  ackedAt?: number;
  id?: string;
}

export interface Source {
  service: ChildService;
  receiver: Receiver;
  deliveries: Delivery[];
  sent: Sent[];
  refused: string[];
  /** Ends the stream of requests (after the one in flight). */
  stopStream(): Promise<void>;
  /** While true, the receiver answers 503 to every `processed-requests` notification. */
  failing: { processed: boolean };
}

/** `rewards …` as a child process, not waited for synchronously (the stream goes on meanwhile). */
export function rewards(args: string[], env: Record<string, string>): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('exit', (status) => resolve({ status, stdout, stderr }));
  });
}

/** The service on its new database, a tenant subscribed to both request events, a receiver failing the processed ones, and the stream of requests running. */
export async function startSource(env: Record<string, string>, dataDir: string): Promise<Source> {
  const { client } = await cliTenant(env, dataDir, 'backup');
  const deliveries: Delivery[] = [];
  const failing = { processed: true };
  const receiver = await startHttpReceiver((request) => {
    const event = String(request.headers['x-webhook-event']);
    const status = failing.processed && event === 'processed-requests' ? 503 : 204;
    deliveries.push({ webhookId: String(request.headers['webhook-id']), event, requestId: (JSON.parse(request.body) as { id: string }).id, status });
    return { status };
  });
  const service = await startChildService(env);
  const token = await clientToken(service.url, client);
  for (const event of ['registered-request', 'processed-request']) {
    const created = await api(service.url, 'POST', '/v2/subscriptions', { token, body: { event, callback: { url: `${receiver.url}/${event}` } } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
  }
  const sent: Sent[] = [];
  const refused: string[] = [];
  let sending = true;
  const stream = (async () => {
    while (sending) {
      const request: Sent = { sentAt: Date.now() };
      sent.push(request);
      const response = await api(service.url, 'POST', '/v2/requests', { token, body: { experience: 'summer', event: 'buy', data: { n: sent.length } } }).catch((error: Error) => ({
        status: 0,
        body: error.message,
      }));
      if (response.status === 202) Object.assign(request, { ackedAt: Date.now(), id: (response.body as { id: string }).id });
      else refused.push(`${response.status} ${JSON.stringify(response.body)}`);
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, 1000 / RATE_PER_SECOND - (Date.now() - request.sentAt))));
    }
  })();
  return {
    service,
    receiver,
    deliveries,
    sent,
    refused,
    failing,
    async stopStream() {
      sending = false;
      await stream;
    },
  };
}

/** The ids of the requests answered 202 before `time`. */
export function ackedBefore(source: Source, time: number): string[] {
  return source.sent.filter((request) => request.ackedAt !== undefined && request.ackedAt < time).map((request) => request.id!);
}

export interface BackupUnderLoad<T> {
  /** Requests answered 202 before the backup began. */
  ackedBeforeBackup: string[];
  /** What `take` answered. */
  taken: T;
  backupMs: number;
  /** Requests answered 202 while the backup ran, and the slowest of them (ms): writers were not held up. */
  ackedDuring: number;
  slowestDuringMs: number;
}

/**
 * Waits until the stream has run a while and deliveries are failing (so some are pending), takes
 * the backup with `take` while the stream goes on, and lets the stream run a little after it.
 */
export async function backupUnderLoad<T>(source: Source, take: () => Promise<T>): Promise<BackupUnderLoad<T>> {
  await eventually(() => ackedBefore(source, Date.now()).length >= 40 && source.deliveries.filter((d) => d.status === 503).length >= 10, 30_000, 'requests answered and deliveries failing');
  const began = Date.now();
  const ackedBeforeBackup = ackedBefore(source, began);
  const taken = await take();
  const ended = Date.now();
  const during = source.sent.filter((request) => request.ackedAt !== undefined && request.sentAt >= began && request.ackedAt <= ended);
  const afterwards = ackedBefore(source, Date.now()).length;
  await eventually(() => ackedBefore(source, Date.now()).length >= afterwards + 10, 20_000, 'requests answered after the backup');
  return {
    ackedBeforeBackup,
    taken,
    backupMs: ended - began,
    ackedDuring: during.length,
    slowestDuringMs: Math.max(0, ...during.map((request) => request.ackedAt! - request.sentAt)),
  };
}

/** Stops the stream and the service (SIGTERM, as the restore procedure says), keeping the receiver. */
export async function stopSource(source: Source): Promise<void> {
  await source.stopStream();
  assert.deepEqual(source.refused, [], 'every request of the stream was answered 202');
  source.service.process.kill('SIGTERM');
  assert.equal(await source.service.exited, 0, source.service.output());
}

/**
 * The restored database (`env.DATABASE_URL`) checked, the service started on it, and what was
 * pending delivered (see the top of this file). Answers how many notifications were pending.
 */
export async function serveRestored(source: Source, env: Record<string, string>, ackedBeforeBackup: string[]): Promise<{ pending: number }> {
  const storage = openStorage(env.DATABASE_URL!);
  let pending: { id: string; attempt_count: number }[];
  try {
    const present = new Set((await storage.db.selectFrom('requests').select('id').execute()).map((row) => row.id));
    assert.deepEqual(
      ackedBeforeBackup.filter((id) => !present.has(id)),
      [],
      'every request answered 202 before the backup began is in the restored database',
    );
    pending = await storage.db.selectFrom('notifications').select(['id', 'attempt_count']).where('status', '=', 'pending').where('test', '=', 0).execute();
  } finally {
    await storage.close();
  }
  const tried = pending.filter((notification) => notification.attempt_count > 0);
  assert.ok(tried.length > 0, `deliveries had failed and were pending at backup time (${pending.length} pending, none tried)`);
  const seenBefore = new Set(source.deliveries.map((delivery) => delivery.webhookId));
  assert.deepEqual(
    tried.filter((notification) => !seenBefore.has(notification.id)).map((notification) => notification.id),
    [],
    'the webhook-id of each notification tried before the backup is the one its receiver saw then',
  );

  // The receiver is back; what it gets from now on comes from the restored service.
  source.failing.processed = false;
  const restoredFrom = source.deliveries.length;
  const service = await startChildService(env);
  try {
    const deliveredAfter = () => new Set(source.deliveries.slice(restoredFrom).map((delivery) => delivery.webhookId));
    await eventually(
      () => pending.every((notification) => deliveredAfter().has(notification.id)),
      30_000,
      'every notification pending in the backup delivered after the restore, same webhook-id',
    ).catch((error: Error) => {
      const missing = pending.filter((notification) => !deliveredAfter().has(notification.id));
      throw new Error(`${error.message}: ${missing.length} of ${pending.length} missing, e.g. ${missing[0]?.id}`);
    });
    const undelivered = () => {
      const delivered = new Set(source.deliveries.filter((delivery) => delivery.status < 300).map((delivery) => `${delivery.requestId} ${delivery.event}`));
      return ackedBeforeBackup.filter((id) => !delivered.has(`${id} registered-requests`) || !delivered.has(`${id} processed-requests`));
    };
    await eventually(() => undelivered().length === 0, 30_000, 'both notifications of every request answered before the backup delivered').catch((error: Error) => {
      throw new Error(`${error.message}: ${undelivered().length} requests, e.g. ${undelivered()[0]}`);
    });
  } finally {
    service.process.kill('SIGTERM');
    await service.exited;
  }
  return { pending: pending.length };
}
