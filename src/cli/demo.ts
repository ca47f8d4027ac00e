import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, relative } from 'node:path';
import type { Command } from 'commander';
import { Webhook } from 'standardwebhooks';
import { createDeps, createLogger } from '../deps.js';
import { invalid } from '../domain/errors.js';
import { parseImportFile } from '../domain/experiences/import-file.js';
import { secretMatches } from '../domain/tokens/client-secret.js';
import { REQUEST_EVENTS } from '../domain/notifications/events.js';
import { createAccount, createClient, resolveScopes } from '../services/accounts.js';
import { importExperiences } from '../services/experiences.js';
import { findAccountByIdOrName } from '../storage/repositories/accounts.js';
import { findOAuthClient } from '../storage/repositories/oauth-clients.js';
import { requireExistingDatabase, requireSecretKey } from './existing-database.js';
import { DeploymentApi, deploymentUrl, relayDeliveries, signingSecretLines, type EffectiveSettings, type ListenSession } from './listen.js';

/**
 * `rewards demo`: a reward request taken to its two verified webhooks against the running service,
 * in one command, for a new user (README, "Quick start"). It sets up, idempotently, an account
 * (`demo`), an OAuth client of it (its credentials kept in DATA_DIR/demo-credentials.json, mode
 * 0600, and reused while the service still accepts them) and an experience (`demo`, one coupon of
 * unlimited stock), as the operator's commands do on the service's database. Then it uses the
 * service only as a client would: a token from the real token endpoint, a receiver on loopback
 * joined to the service through a listen session (listen.ts: the service never calls the laptop,
 * so no address policy is relaxed), a reward request, and both webhooks verified with the
 * `standardwebhooks` library before anything in them is printed. It ends with the credentials and
 * the commands that do the same by hand.
 */

interface CliIo {
  env: Record<string, string | undefined>;
  out(text: string): void;
  err(text: string): void;
}

interface DemoOptions {
  account: string;
  apiUrl?: string;
  timeout: string;
}

interface DemoCredentials {
  accountId: string;
  client_id: string;
  client_secret: string;
}

const DEMO_EXPERIENCE = {
  name: 'demo',
  title: 'Demo campaign (rewards demo)',
  events: [],
  prizes: [{ id: 'demo-coupon', bucket: 'coupons', title: '10% off', description: 'made by rewards demo', value: 10, kind: 'coupon' }],
};
/** The scopes the demo's token asks for: send a request, open a listen session. */
const DEMO_SCOPES = 'requests:write requests:read subscriptions:write';

interface ReceivedCall {
  headers: IncomingHttpHeaders;
  body: string;
}

/** A receiver on loopback that answers 204 and keeps each call's raw body and headers. */
function startReceiver(): Promise<{ url: URL; calls: ReceivedCall[]; close(): Promise<void> }> {
  const calls: ReceivedCall[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      response.writeHead(204).end();
      calls.push({ headers: request.headers, body: Buffer.concat(chunks).toString('utf8') });
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      resolve({
        url: new URL(`http://127.0.0.1:${port}/webhooks`),
        calls,
        close: () => new Promise((done) => server.close(() => done())),
      });
    });
  });
}

function readCredentials(file: string): DemoCredentials | undefined {
  try {
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as Partial<DemoCredentials>;
    if (typeof parsed.accountId === 'string' && typeof parsed.client_id === 'string' && typeof parsed.client_secret === 'string') return parsed as DemoCredentials;
  } catch {
    /* none yet, or not ours: a new client */
  }
  return undefined;
}

/** The account, client and experience, made or found on the service's existing database (as `rewards accounts create` … do). */
async function setUp(io: CliIo, effective: EffectiveSettings, accountName: string): Promise<{ credentials: DemoCredentials; reused: boolean; file: string; saved: boolean }> {
  const { config, settings } = effective();
  await requireExistingDatabase(config, settings);
  requireSecretKey(config, settings);
  const deps = await createDeps(config, { log: createLogger(config, { write: (line) => io.err(line) }), generateSecretKey: false });
  try {
    const account = (await findAccountByIdOrName(deps.db, accountName)) ?? (await createAccount(deps.db, accountName, { field: '--account' }));
    if (!account.active) throw invalid(`the account "${account.name}" is deactivated; reactivate it or give another --account`);
    if (account.isOperator) throw invalid(`"${account.name}" is the operator's account; give a client account: --account NAME`);
    await importExperiences(deps.db, account.id, parseImportFile(JSON.stringify(DEMO_EXPERIENCE)), deps.clock());
    const file = join(config.dataDir, account.name === 'demo' ? 'demo-credentials.json' : `demo-credentials-${account.id}.json`);
    const kept = readCredentials(file);
    if (kept && kept.accountId === account.id) {
      const client = await findOAuthClient(deps.db, kept.client_id);
      if (client?.active && client.accountId === account.id && secretMatches(kept.client_secret, client.secretHash)) return { credentials: kept, reused: true, file, saved: true };
    }
    const issued = await createClient(deps.db, account.id, resolveScopes(undefined, '--scopes'));
    const credentials = { accountId: account.id, client_id: issued.client.clientId, client_secret: issued.clientSecret };
    let saved = true;
    try {
      writeFileSync(file, `${JSON.stringify(credentials, null, 2)}\n`, { mode: 0o600 });
      chmodSync(file, 0o600);
    } catch {
      saved = false; // a DATA_DIR this user cannot write: the credentials are printed below all the same
    }
    return { credentials, reused: false, file, saved };
  } finally {
    await deps.close();
  }
}

/** Which of the session's secrets verifies the call (standardwebhooks: the raw body, webhook-id, -timestamp, -signature), and the payload. */
function verify(call: ReceivedCall, secrets: ListenSession['signingSecrets']): { payload: Record<string, unknown>; secret: ListenSession['signingSecrets'][number] } | undefined {
  const headers = Object.fromEntries(Object.entries(call.headers).map(([name, value]) => [name, String(value)]));
  for (const secret of secrets) {
    try {
      return { payload: new Webhook(secret.secret).verify(call.body, headers) as Record<string, unknown>, secret };
    } catch {
      /* the next secret */
    }
  }
  return undefined;
}

async function demo(io: CliIo, options: DemoOptions, effective: EffectiveSettings): Promise<void> {
  const timeoutS = Number(options.timeout);
  if (!Number.isFinite(timeoutS) || timeoutS <= 0) throw invalid(`--timeout takes a number of seconds, got "${options.timeout}"`);
  const base = await deploymentUrl(io, options.apiUrl, effective, 'Start it first, in another terminal: npm start');
  const { credentials, reused, file, saved } = await setUp(io, effective, options.account);
  const where = relative(process.cwd(), file).startsWith('..') ? file : relative(process.cwd(), file);
  io.out(
    `Service: ${base.origin}\n` +
      `Account ${options.account} (${credentials.accountId}), OAuth client ${credentials.client_id} (${reused ? `kept from ${where}` : saved ? `new, saved to ${where}` : 'new'}), experience "demo" with the prize demo-coupon.\n`,
  );

  const api = new DeploymentApi(base, credentials.client_id, credentials.client_secret, DEMO_SCOPES);
  await api.accessToken();
  io.out(`Token: POST ${new URL('/v2/oauth/token', base).href} (client credentials, scope ${DEMO_SCOPES}).\n`);

  const receiver = await startReceiver();
  const stop = new AbortController();
  let relay: Promise<void> | undefined;
  try {
    const session = await api.call<ListenSession>('POST', '/v2/listen-sessions', { body: { events: [...REQUEST_EVENTS] } });
    io.out(
      `Receiver: ${receiver.url.href} on this machine, joined through listen session ${session.id} (as rewards listen does: the service never calls this machine). Signing secrets:\n${signingSecretLines(session)}`,
    );
    relay = relayDeliveries(io, api, session, receiver.url, stop.signal);
    relay.catch(() => {}); // awaited below; an early failure must not go unhandled meanwhile

    const sent = await api.call<{ id: string; status: string }>('POST', '/v2/requests', { body: { experience: DEMO_EXPERIENCE.name, event: 'purchase', data: { orderId: `demo-${Date.now()}` } } });
    io.out(`Reward request ${sent.id}: POST /v2/requests → 202 ${sent.status}. Waiting for its webhooks…\n`);

    const deadline = Date.now() + timeoutS * 1000;
    const arrived = new Map<string, ReceivedCall>();
    while (arrived.size < REQUEST_EVENTS.length && Date.now() < deadline) {
      for (const call of receiver.calls) {
        const event = String(call.headers['x-webhook-event']);
        let id: unknown;
        try {
          id = (JSON.parse(call.body) as { id?: unknown }).id;
        } catch {
          id = undefined;
        }
        if (id === sent.id && !arrived.has(event)) arrived.set(event, call);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }

    let verified = 0;
    for (const event of REQUEST_EVENTS) {
      const call = arrived.get(event);
      if (!call) {
        io.out(`\n${event}: none arrived within ${timeoutS} s\n`);
        continue;
      }
      const checked = verify(call, session.signingSecrets);
      if (!checked) {
        io.out(`\n${event} ${String(call.headers['webhook-id'])}: signature NOT verified by any of the session's secrets\n`);
        continue;
      }
      verified += 1;
      io.out(
        `\n${event} ${String(call.headers['webhook-id'])}: signature verified (standardwebhooks, with ${checked.secret.secret} of ${checked.secret.url ?? "the account's default secret"})\n` +
          `${JSON.stringify(checked.payload, null, 2)}\n`,
      );
    }
    if (verified < REQUEST_EVENTS.length) {
      throw new Error(
        `${REQUEST_EVENTS.length - verified} of the ${REQUEST_EVENTS.length} webhooks of ${sent.id} did not arrive verified; is the service's worker running (rewards serve --role all, as npm start runs it)?`,
      );
    }
    io.out(`\nVerified webhooks: ${REQUEST_EVENTS.join(' and ')} of ${sent.id}.\n`);
    io.out(byHand(base, credentials, saved ? where : undefined, options.apiUrl !== undefined));
  } finally {
    stop.abort();
    if (relay) await relay.catch((error: Error) => io.err(`rewards: ${error.message}\n`));
    await receiver.close();
  }
}

/** The demo's steps as commands to copy: the client's credentials, a token, a reward request, and rewards listen to a receiver of one's own. */
function byHand(base: URL, credentials: DemoCredentials, file: string | undefined, namedApi: boolean): string {
  const origin = base.origin;
  return [
    '',
    `The same by hand, with the demo client (its secret is shown here${file ? ` and kept in ${file}` : ' only'}):`,
    '',
    `export REWARDS_CLIENT_ID=${credentials.client_id} REWARDS_CLIENT_SECRET=${credentials.client_secret}`,
    `TOKEN=$(curl -s ${origin}/v2/oauth/token -d grant_type=client_credentials --data-urlencode 'scope=requests:write requests:read' -d client_id=$REWARDS_CLIENT_ID -d client_secret=$REWARDS_CLIENT_SECRET | jq -r .access_token)`,
    `curl -s ${origin}/v2/requests -H "Authorization: Bearer $TOKEN" -H 'content-type: application/json' -d '{"experience":"demo","event":"purchase"}'`,
    `curl -s ${origin}/v2/requests -H "Authorization: Bearer $TOKEN"`,
    '',
    'Its webhooks, on a receiver of your own (docs/receiving-webhooks.md), signed with the secret it prints:',
    '',
    `npx rewards listen --forward-to http://localhost:3000/hooks${namedApi ? ` --api-url ${origin}` : ''}`,
    '',
  ].join('\n');
}

/** `rewards demo`, added to the program by program.ts. */
export function addDemoCommand(program: Command, io: CliIo, effective: EffectiveSettings): void {
  program
    .command('demo')
    .description(
      'against the running service: set up a demo account, client and experience (idempotent), send a reward request, and receive and verify its two webhooks on a local receiver; prints the credentials and the curl commands to do it by hand',
    )
    .option('--account <name>', 'the account to use or create', 'demo')
    .option('--api-url <url>', 'the running service (default: REWARDS_API_URL, else PUBLIC_URL, else http://HOST:PORT of this configuration)')
    .option('--timeout <seconds>', 'how long to wait for the webhooks', '30')
    .action((options: DemoOptions) => demo(io, options, effective));
}
