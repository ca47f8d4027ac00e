/**
 * What an integrator writes first, end to end, with the typed client the console uses
 * (openapi-fetch over types generated from the service's own OpenAPI document):
 *
 *   1. get an access token with the client credentials grant;
 *   2. start a receiver and create a subscription pointing at it;
 *   3. ask for a test send, receive it, and verify its signature with `standardwebhooks`
 *      on the raw body, before trusting anything in it;
 *   4. clean up.
 *
 * Run it against a service (CI does, against the real one: test/examples.test.ts):
 *   REWARDS_URL=http://127.0.0.1:8080 CLIENT_ID=cli_… CLIENT_SECRET=… \
 *     node --import tsx examples/receive-a-webhook.ts
 * The receiver listens on RECEIVER_HOST (default 127.0.0.1): the service must be allowed to call
 * it (a public address in production; CALLBACK_ALLOW_PRIVATE_NETWORKS=true for a local try).
 * Copy it freely; only `createClient`, `paths` and `Webhook` come from libraries.
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import createClient from 'openapi-fetch';
import { Webhook } from 'standardwebhooks';
import type { paths } from '../console/src/api/schema.js';

const baseUrl = process.env.REWARDS_URL ?? 'http://127.0.0.1:8080';
const clientId = required('CLIENT_ID');
const clientSecret = required('CLIENT_SECRET');

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`set ${name}`);
  return value;
}

/** 1. A token: the client credentials grant, form-encoded (RFC 6749 §4.4). */
async function accessToken(): Promise<string> {
  const response = await fetch(`${baseUrl}/v2/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret, scope: 'subscriptions:read subscriptions:write' }),
  });
  if (!response.ok) throw new Error(`token: HTTP ${response.status} ${await response.text()}`);
  return ((await response.json()) as { access_token: string }).access_token;
}

/** A receiver that hands the first call it gets, raw body and headers, to the caller. */
function startReceiver(): Promise<{ url: string; next: Promise<{ body: string; headers: IncomingHttpHeaders }>; close(): void }> {
  let deliver: (call: { body: string; headers: IncomingHttpHeaders }) => void;
  const next = new Promise<{ body: string; headers: IncomingHttpHeaders }>((resolve) => (deliver = resolve));
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      // Answer 2xx at once; do the work afterwards (the service waits at most CALLBACK_TIMEOUT).
      response.writeHead(204).end();
      deliver({ body: Buffer.concat(chunks).toString('utf8'), headers: request.headers });
    });
  });
  return new Promise((resolve) =>
    server.listen(0, process.env.RECEIVER_HOST ?? '127.0.0.1', () => {
      const { address, port } = server.address() as AddressInfo;
      resolve({ url: `http://${address}:${port}/webhooks/rewards`, next, close: () => server.close() });
    }),
  );
}

async function main(): Promise<void> {
  const api = createClient<paths>({ baseUrl, headers: { authorization: `Bearer ${await accessToken()}` } });
  const receiver = await startReceiver();
  try {
    // 2. A subscription to registered requests; its signing secret comes back here (and at GET /v2/subscriptions/{id}/secret whenever asked).
    const created = await api.POST('/v2/subscriptions', { body: { event: 'registered-requests', description: 'example receiver', callback: { url: receiver.url } } });
    if (!created.data) throw new Error(`create subscription: ${JSON.stringify(created.error)}`);
    const { _id: subscriptionId, secret } = created.data;
    console.log(`subscription ${subscriptionId} → ${receiver.url}`);

    // 3. A test send: a sample body of the contract's shape, signed like any notification.
    const sent = await api.POST('/v2/subscriptions/{subscriptionId}/test', { params: { path: { subscriptionId } } });
    if (!sent.data) throw new Error(`test send: ${JSON.stringify(sent.error)}`);
    // Wait at most 15 s, and clear the timer once the call came: a pending timer keeps Node running.
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('no call within 15 s')), 15_000)));
    const call = await Promise.race([receiver.next, timeout]).finally(() => clearTimeout(timer));
    const headers = Object.fromEntries(Object.entries(call.headers).map(([name, value]) => [name, String(value)]));
    const payload = new Webhook(secret).verify(call.body, headers) as { id: string; rewardValue: number };
    console.log(
      `received ${headers['x-webhook-event']} ${headers['webhook-id']} (test: ${headers['x-webhook-test'] === 'true'}), signature verified: request ${payload.id}, reward value ${payload.rewardValue}`,
    );
    if (headers['webhook-id'] !== sent.data.notificationId) throw new Error('the webhook-id is the notification id');

    // 4. Clean up.
    await api.DELETE('/v2/subscriptions/{subscriptionId}', { params: { path: { subscriptionId } } });
  } finally {
    receiver.close();
  }
}

await main();
