// PostgreSQL failed over under a request stream, three ways, on a highly available cluster on
// loopback (chaos/ha-cluster.ts: Patroni, etcd, HAProxy, synchronous replication): the primary's
// processes killed, the primary silenced (its connections left open, nothing answered), and a
// planned switchover. One `rewards serve` (API and worker) with the default database bounds and
// JOB_LEASE reaches the cluster through HAProxy's one address. docs/deployment.md, "High availability".
import { setTimeout as sleep } from 'node:timers/promises';
import type { Storage } from '../src/storage/database.js';
import { startHaCluster, type HaCluster } from './ha-cluster.js';
import { checkBooks, createEnvironment, openLoopLoad, setUpTenant, startService, stopGracefully, waitForQuiescence, type LoadResult } from './harness.js';
import { startChaosReceiver, type ChaosReceiver } from './receiver.js';
import type { Outcome, Scenario } from './scenarios.js';

type FailoverMode = 'killed' | 'silenced' | 'switchover';

const FAULTS: Record<FailoverMode, (cluster: HaCluster) => Promise<string>> = {
  killed: (cluster) => cluster.killPrimary(),
  silenced: (cluster) => cluster.silencePrimary(),
  switchover: (cluster) => cluster.switchover(),
};

/** The load goes on this long after the new primary is reachable: time to see the service serve again (shorter in CI's short runs). */
const LOAD_AFTER_REACHABLE_MS = { full: 15_000, short: 8_000 };
/** How long the clients wait for an answer (as in the issue that measured the wedge). */
const CLIENT_TIMEOUT_MS = 15_000;
/** An answer slower than this counts as part of the outage, as a failure does. */
const SLOW_ANSWER_MS = 2_000;
/** The service's JOB_LEASE: the default, so that an outcome lost with its connection would be seen waiting it out. */
const JOB_LEASE_MS = 60_000;

/** The goals the figures are held to (docs/deployment.md, "High availability"); printed, as timings are not pass or fail on a shared machine. */
export const FAILOVER_GOALS: Record<string, number> = {
  'acknowledged requests lost': 0,
  'notifications lost': 0,
  'outage after the new primary is reachable (s)': 5,
  'outcomes recorded after the new primary is reachable (s)': 10,
};

/**
 * Polls the delivery log until none of `ids` is pending any more; answers how long after `since`
 * that was, or undefined if some still were after `limitMs`.
 */
async function outcomesRecorded(storage: Storage, ids: string[], since: number, limitMs: number): Promise<number | undefined> {
  let pending = ids;
  while (pending.length > 0) {
    if (Date.now() - since > limitMs) return undefined;
    const rows = await storage.db
      .selectFrom('notifications')
      .select('id')
      .where('id', 'in', pending)
      .where('status', '=', 'pending')
      .execute()
      .catch(() => undefined);
    if (rows) pending = rows.map((row) => row.id);
    if (pending.length > 0) await sleep(250);
  }
  return Math.max(0, Date.now() - since);
}

/** What the clients saw: failures and slow answers around the failover, against when the new primary was reachable. */
function clientFigures(load: LoadResult, faultAt: number, reachableAt: number) {
  const failed = load.timeline.filter((entry) => entry.status !== 202);
  const disrupted = load.timeline.filter((entry) => entry.status !== 202 || entry.doneAt - entry.sentAt > SLOW_ANSWER_MS);
  const lastDisrupted = Math.max(reachableAt, ...disrupted.map((entry) => entry.doneAt));
  const firstFailed = Math.min(...failed.map((entry) => entry.doneAt));
  const lastFailed = Math.max(...failed.map((entry) => entry.doneAt));
  return {
    'new primary reachable after the fault (s)': (reachableAt - faultAt) / 1000,
    'requests refused or unanswered': failed.length,
    'window of refusals (s)': failed.length === 0 ? 0 : (lastFailed - firstFailed) / 1000,
    'outage after the new primary is reachable (s)': (lastDisrupted - reachableAt) / 1000,
    hung: load.timeline.filter((entry) => entry.status === 0 && entry.doneAt - entry.sentAt >= CLIENT_TIMEOUT_MS - 100).length,
  };
}

async function runFailover(mode: FailoverMode, options: { seconds: number; rate: number; short: boolean }): Promise<Outcome> {
  const cluster = await startHaCluster();
  let receiver: ChaosReceiver | undefined;
  let storage: Storage | undefined;
  const notes: string[] = [];
  try {
    const environment = await createEnvironment('postgres', cluster.url);
    environment.env.JOB_LEASE = `${JOB_LEASE_MS / 1000}s`;
    receiver = await startChaosReceiver();
    const service = await startService(environment);
    try {
      const expectedSeconds = options.seconds + 45;
      const tenant = await setUpTenant(environment, service.url, receiver, Math.round((options.rate * expectedSeconds) / 3));
      let reachableAt: number | undefined;
      const loading = openLoopLoad(() => [service.url], tenant.token, options.rate, expectedSeconds + 120, {
        timeoutMs: CLIENT_TIMEOUT_MS,
        enough: () => reachableAt !== undefined && Date.now() > reachableAt + LOAD_AFTER_REACHABLE_MS[options.short ? 'short' : 'full'],
      });
      await sleep(options.seconds * 1000);
      const faultAt = Date.now();
      const previous = await FAULTS[mode](cluster);
      const promoted = await cluster.waitForNewPrimary(previous, 120_000);
      reachableAt = promoted.reachableAt;
      notes.push(`${previous} ${mode}, ${promoted.node} primary`);
      // The calls that reached the receiver before the new primary was reachable: each one's outcome must be written, once the database is back.
      const callsBefore = new Set(receiver.calls.filter((call) => call.answer === 'ok' && call.at < promoted.reachableAt).map((call) => call.webhookId));
      storage = environment.storage();
      const recordedMs = await outcomesRecorded(storage, [...callsBefore], promoted.reachableAt, JOB_LEASE_MS);
      const load = await loading;
      await waitForQuiescence(storage, load.acknowledged, receiver, 120_000);
      const books = await checkBooks(storage, load, receiver, tenant);
      const resent = receiver.calls.filter((call) => call.answer === 'ok' && call.at >= promoted.reachableAt && callsBefore.has(call.webhookId)).length;
      const clients = clientFigures(load, faultAt, promoted.reachableAt);
      const figures: Record<string, number> = {
        ...clients,
        'acknowledged requests lost': books.lost,
        'notifications lost': books.due - books.delivered,
        'outcomes recorded after the new primary is reachable (s)': recordedMs === undefined ? JOB_LEASE_MS / 1000 : recordedMs / 1000,
        'calls made again after the failover': resent,
      };
      const problems = [...books.problems];
      if (recordedMs === undefined) problems.push(`calls made before the failover still had no outcome ${JOB_LEASE_MS / 1000} s after the new primary was reachable: they waited out their lease`);
      if (clients.hung > 0) problems.push(`${clients.hung} requests had no answer within ${CLIENT_TIMEOUT_MS / 1000} s: the service hung on the database`);
      const unexpected = [...load.refused].filter(([status]) => status >= 500 && status !== 503);
      if (unexpected.length > 0) problems.push(`answers other than 202 and 503: ${JSON.stringify(unexpected)}`);
      if (service.process.exitCode !== null || service.process.signalCode !== null)
        problems.push(`the service exited (${service.process.exitCode ?? service.process.signalCode}): it must ride the failover out`);
      return { scenario: `failover: primary ${mode}`, dialect: 'postgres', ...books, problems, refused: JSON.stringify(Object.fromEntries(load.refused)), notes, figures };
    } finally {
      await stopGracefully(service);
      await environment.cleanup().catch(() => undefined);
    }
  } finally {
    await storage?.close();
    await receiver?.close();
    await cluster.stop();
  }
}

const failoverScenario = (mode: FailoverMode): Scenario => ({
  name: `PostgreSQL failover: primary ${mode}`,
  dialects: ['postgres'],
  // 50 requests/s, the primary lost at 20 s: how the failover goals are stated.
  rate: 50,
  seconds: 20,
  unavailable: () => (process.getuid?.() !== 0 ? 'needs root: Patroni runs PostgreSQL as the postgres user, and silencing uses iptables' : undefined),
  run: (options) => runFailover(mode, options),
});

export const FAILOVER_SCENARIOS: Record<string, Scenario> = {
  'failover-killed': failoverScenario('killed'),
  'failover-silenced': failoverScenario('silenced'),
  'failover-switchover': failoverScenario('switchover'),
};
