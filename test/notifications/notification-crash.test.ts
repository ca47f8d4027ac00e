// needs: database
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it, type TestContext } from 'node:test';
import { childEnvironment, runCliInProcess, startChildService, type ChildService } from '../support/child-service.js';
import { testDialects, type TestDialect } from '../support/databases.js';
import { eventually, verifyWebhook } from '../support/notifications.js';
import { startHttpReceiver, type Receiver } from '../support/receivers.js';
import { api } from '../support/test-app.js';
import { sendRequests } from '../support/requests.js';

/**
 * Crash safety of the delivery engine, with the real `rewards serve` binary as a child process:
 * hundreds of notifications pending or in flight to a slow receiver, then the service is killed
 * (SIGKILL) or stopped (SIGTERM) and started again on the same database. Every notification must
 * reach the receiver at least once, and a repeated delivery carries the same webhook-id.
 */

const REQUESTS = 300;
const pairKey = (requestId: string, event: string) => `${requestId} ${event}`;
const EVENTS = ['registered-requests', 'processed-requests'] as const;

interface Scenario {
  env: Record<string, string>;
  receiver: Receiver;
  /** Calls received and not answered yet. */
  inFlight: () => number;
  /** Distinct (request id, event) pairs received so far, kept up to date by the receiver. */
  pairs: Set<string>;
  secrets: Record<(typeof EVENTS)[number], string>;
  token: string;
  /** The running service (the first one until restart() is called). */
  service: ChildService;
  /** Starts the service again with the same environment (same database). */
  restart(): Promise<ChildService>;
  cleanup(): Promise<void>;
}

/** Slow receiver (20–40 ms per answer: calls stay in flight long enough to be cut off), an account, a client, an experience and one subscription per event. */
async function prepare(dialect: TestDialect): Promise<Scenario> {
  const child = await childEnvironment(dialect);
  const env = {
    ...child.env,
    LOG_LEVEL: 'warn',
    CALLBACK_ALLOW_PRIVATE_NETWORKS: 'true',
    RETRY_INTERVAL: '200ms',
    JOB_LEASE: '1s',
    // Tokens name PUBLIC_URL as their issuer: fixed, so a token stays valid across restarts on new ports.
    PUBLIC_URL: 'http://127.0.0.1:8080',
  };
  let pending = 0;
  const pairs = new Set<string>();
  const receiver = await startHttpReceiver(async (request) => {
    pairs.add(pairKey(String(JSON.parse(request.body).id), String(request.headers['x-webhook-event'])));
    pending += 1;
    try {
      await sleep(20 + Math.floor(Math.random() * 20));
    } finally {
      pending -= 1;
    }
    return { status: 204 };
  });
  const services: ChildService[] = [];
  const cleanup = async () => {
    for (const s of services) if (s.process.exitCode === null && s.process.signalCode === null) s.process.kill('SIGKILL');
    await Promise.all(services.map((s) => s.exited));
    await receiver.close();
    await child.cleanup();
    rmSync(child.dataDir, { recursive: true, force: true });
  };
  try {
    const cli = async (args: string[]) => {
      const result = await runCliInProcess(args, env);
      assert.equal(result.status, 0, `rewards ${args.join(' ')}: ${result.stderr}`);
      return JSON.parse(result.stdout);
    };
    await cli(['migrate']);
    const account = await cli(['accounts', 'create', '--name', 'crash-test']);
    const client = await cli(['clients', 'create', '--account', account.id]);
    const experienceFile = join(child.dataDir, 'experiences.json');
    writeFileSync(experienceFile, JSON.stringify({ name: 'summer', title: 'Summer', prizes: [{ id: 'cpn', bucket: 'coupons', title: '10 off', value: 10, kind: 'coupon' }] }));
    await cli(['experiences', 'import', experienceFile, '--account', account.id]);

    const service = await startChildService(env);
    services.push(service);
    const tokenResponse = await fetch(`${service.url}/v2/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret, scope: client.scopes }),
    });
    assert.equal(tokenResponse.status, 200, await tokenResponse.clone().text());
    const token = ((await tokenResponse.json()) as { access_token: string }).access_token;
    const secrets = {} as Scenario['secrets'];
    for (const event of EVENTS) {
      const created = await api(service.url, 'POST', '/v2/subscriptions', { token, body: { event, callback: { url: `${receiver.url}/${event}` } } });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      secrets[event] = created.body.secret;
    }
    const scenario: Scenario = {
      env,
      receiver,
      inFlight: () => pending,
      pairs,
      secrets,
      token,
      service,
      async restart() {
        scenario.service = await startChildService(env);
        services.push(scenario.service);
        return scenario.service;
      },
      cleanup,
    };
    return scenario;
  } catch (error) {
    await cleanup();
    throw error;
  }
}

/**
 * Checks what the receiver got: every (request, event) pair at least once, every webhook-id always
 * with the same body and event, and one webhook-id per pair (a repeat is the same notification).
 * Returns how many calls were repeats.
 */
function checkDeliveries(scenario: Scenario, requestIds: string[]): { duplicates: number; missing: number } {
  const byId = new Map<string, { body: string; event: string }>();
  const idsOfPair = new Map<string, Set<string>>();
  let duplicates = 0;
  for (const request of scenario.receiver.requests) {
    const webhookId = String(request.headers['webhook-id']);
    const event = String(request.headers['x-webhook-event']) as (typeof EVENTS)[number];
    const seen = byId.get(webhookId);
    if (seen) {
      duplicates += 1;
      assert.equal(request.body, seen.body, `webhook-id ${webhookId} was sent with two different bodies`);
      assert.equal(event, seen.event, `webhook-id ${webhookId} was sent for two events`);
    } else {
      byId.set(webhookId, { body: request.body, event });
    }
    assert.equal(request.path, `/${event}`);
    const body = verifyWebhook(scenario.secrets[event], request);
    const key = pairKey(String(body.id), event);
    idsOfPair.set(key, (idsOfPair.get(key) ?? new Set()).add(webhookId));
  }
  for (const [key, ids] of idsOfPair) assert.equal(ids.size, 1, `${key} was delivered under ${ids.size} webhook-ids: ${[...ids].join(', ')}`);
  const expected = new Set(requestIds.flatMap((id) => EVENTS.map((event) => pairKey(id, event))));
  for (const key of idsOfPair.keys()) assert.ok(expected.has(key), `${key}: a notification for a request nobody sent`);
  const missing = [...expected].filter((key) => !idsOfPair.has(key)).length;
  return { duplicates, missing };
}

async function waitUntilEverythingDelivered(t: TestContext, scenario: Scenario, service: ChildService, requestIds: string[]): Promise<void> {
  // A cheap condition to poll (the receiver shares this process); the full check runs once after.
  await eventually(() => scenario.pairs.size >= requestIds.length * EVENTS.length, 60_000, 'every notification to reach the receiver');
  // The delivery log agrees: nothing pending or failed once the last attempts are recorded.
  await eventually(
    async () => {
      const pending = await api(service.url, 'GET', '/v2/notifications?status=pending&limit=1', { token: scenario.token });
      return pending.status === 200 && pending.body.data.length === 0;
    },
    30_000,
    'no pending notification',
  );
  const failed = await api(service.url, 'GET', '/v2/notifications?status=failed&limit=1', { token: scenario.token });
  assert.deepEqual(failed.body.data, []);
  const { duplicates, missing } = checkDeliveries(scenario, requestIds);
  assert.equal(missing, 0);
  t.diagnostic(`${scenario.receiver.requests.length} calls for ${requestIds.length * EVENTS.length} notifications, ${duplicates} repeated`);
}

for (const dialect of testDialects()) {
  describe(`notification delivery survives crashes and restarts [${dialect}]`, () => {
    it(`SIGKILL with ${REQUESTS * 2} notifications pending or in flight: after a restart each arrives at least once, repeats keep their webhook-id`, async (t) => {
      const scenario = await prepare(dialect);
      try {
        const requestIds = await sendRequests(scenario.service.url, scenario.token, REQUESTS);
        assert.equal(new Set(requestIds).size, REQUESTS);
        // Kill while calls are in flight (the slow receiver holds them) and notifications still wait.
        await eventually(() => scenario.inFlight() > 0, 30_000, 'a call in flight');
        scenario.service.process.kill('SIGKILL');
        await scenario.service.exited;
        const atKill = scenario.pairs.size;
        t.diagnostic(`killed with ${atKill} of ${REQUESTS * 2} notifications received`);
        assert.ok(atKill < REQUESTS * 2, 'the kill came before everything was delivered');

        const restarted = await scenario.restart();
        await waitUntilEverythingDelivered(t, scenario, restarted, requestIds);
      } finally {
        await scenario.cleanup();
      }
    });

    it('SIGTERM while attempts are in flight: exits 0 after finishing them; after a restart nothing is lost or sent twice', async (t) => {
      const scenario = await prepare(dialect);
      try {
        const requestIds = await sendRequests(scenario.service.url, scenario.token, REQUESTS);
        await eventually(() => scenario.inFlight() > 0, 30_000, 'a call in flight');
        scenario.service.process.kill('SIGTERM');
        assert.equal(await scenario.service.exited, 0, scenario.service.output());
        const stopped = scenario.service;
        const atStop = scenario.pairs.size;
        t.diagnostic(`stopped with ${atStop} of ${REQUESTS * 2} notifications received`);
        assert.ok(atStop < REQUESTS * 2, 'the stop came before everything was delivered');
        assert.equal(scenario.inFlight(), 0, 'the service waited for the calls it had started');

        const restarted = await scenario.restart();
        await waitUntilEverythingDelivered(t, scenario, restarted, requestIds);
        // A graceful stop records every attempt it started, so nothing is sent twice. When it
        // fails, say which were repeated and what both processes logged (warnings and up).
        const calls = new Map<string, number>();
        for (const request of scenario.receiver.requests) {
          const webhookId = String(request.headers['webhook-id']);
          calls.set(webhookId, (calls.get(webhookId) ?? 0) + 1);
        }
        const repeated = [...calls].filter(([, n]) => n > 1).slice(0, 20);
        assert.equal(
          scenario.receiver.requests.length,
          REQUESTS * EVENTS.length,
          `sent more than once: ${JSON.stringify(repeated)}\nfirst process:\n${stopped.output()}\nafter the restart:\n${restarted.output()}`,
        );
      } finally {
        await scenario.cleanup();
      }
    });
  });
}
