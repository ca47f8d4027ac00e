import { REQUEST_EVENTS } from '../domain/notifications/events.js';
import type { Command } from 'commander';
import type { Config } from '../config.js';
import type { Settings } from '../config-file.js';
import { invalid } from '../domain/errors.js';
import { configuredServiceUrl, requireRunningService } from './service-url.js';

/**
 * `rewards listen` (docs/receiving-webhooks.md, "Webhooks on a laptop"): receives, on the
 * developer's machine, the webhooks a deployment sends for their account, and forwards each to a
 * local URL with the headers of the real call (signed as the real ones), through a listen session
 * of the deployment's API (routes/listen-sessions.ts): no public URL. Each local answer is printed
 * and reported, so the delivery log shows it. Ctrl-C ends the session and exits 0.
 *
 * It talks to the deployment over HTTP with an OAuth client of the account (client credentials,
 * scope `subscriptions:write`); it never opens a database. The deployment is --api-url, else
 * REWARDS_API_URL, else the service the configuration names (service-url.ts: the file and
 * environment the other commands read), so next to a local `npm start` it needs no URL. The forward target is the developer's
 * own machine: loopback and private addresses are what it is for, so no address policy applies.
 */

/** Where the command reads its settings and writes its lines (program.ts's CliIo). */
interface CliIo {
  env: Record<string, string | undefined>;
  out(text: string): void;
  err(text: string): void;
}

/** A local receiver that takes longer than this counts as no answer (the deployment's default CALLBACK_TIMEOUT). */
const FORWARD_TIMEOUT_MS = 30_000;
/** The local answer's body reported for the delivery log (it keeps 1 KiB). */
const REPORTED_BODY_CHARS = 4096;
const POLL_WAIT_S = 25;
const RETRY_AFTER_ERROR_MS = 2_000;

/** The settings the other commands read (program.ts's loadEffective). */
export type EffectiveSettings = () => { config: Config; settings: Settings };

interface ListenOptions {
  forwardTo: string;
  events?: string;
  apiUrl?: string;
  clientId?: string;
  clientSecret?: string;
}

interface Delivery {
  notificationId: string;
  event: string;
  headers: Record<string, string>;
  body: string;
}

/**
 * The deployment refused a call: its answer, not a mistake on this side (so not a DomainError, and
 * exit code 1 when it ends the command). The poll tells an ended session (404) by its status.
 */
class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function httpUrl(raw: string, option: string): URL {
  let url: URL;
  try {
    url = new URL(raw.includes('://') ? raw : `http://${raw}`);
  } catch {
    throw invalid(`${option} must be an http(s) URL, got "${raw}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalid(`${option} must be an http(s) URL, got "${raw}"`);
  return url;
}

function parseEvents(raw: string | undefined): string[] {
  if (raw === undefined) return [...REQUEST_EVENTS];
  const events = raw
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean);
  const unknown = events.filter((e) => !(REQUEST_EVENTS as readonly string[]).includes(e));
  if (events.length === 0 || unknown.length > 0) throw invalid(`--events takes a comma-separated list of ${REQUEST_EVENTS.join(', ')}; got "${raw}"`);
  return [...new Set(events)];
}

/** The deployment's API with a client-credentials token, fetched again before it expires or when refused. */
export class DeploymentApi {
  #token: { value: string; until: number } | undefined;

  constructor(
    readonly base: URL,
    private readonly clientId: string,
    private readonly clientSecret: string,
    private readonly scope = 'subscriptions:write',
  ) {}

  async #accessToken(): Promise<string> {
    if (this.#token && Date.now() < this.#token.until) return this.#token.value;
    const response = await fetch(new URL('/v2/oauth/token', this.base), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: this.clientId, client_secret: this.clientSecret, scope: this.scope }),
    });
    const body = (await response.json().catch(() => ({}))) as { access_token?: string; expires_in?: number; error?: string; error_description?: string };
    if (response.status !== 200 || !body.access_token) {
      throw invalid(
        `the deployment at ${this.base.origin} refused the client credentials (HTTP ${response.status}${body.error ? ` ${body.error}` : ''}${body.error_description ? `: ${body.error_description}` : ''}); ` +
          `check --client-id and --client-secret (or REWARDS_CLIENT_ID and REWARDS_CLIENT_SECRET): the client needs the ${this.scope} scope`,
      );
    }
    const lifetimeMs = (body.expires_in ?? 300) * 1000;
    this.#token = { value: body.access_token, until: Date.now() + lifetimeMs - Math.min(60_000, lifetimeMs / 10) };
    return body.access_token;
  }

  /** An access token of the client, from the deployment's token endpoint. */
  accessToken(): Promise<string> {
    return this.#accessToken();
  }

  async call<T>(method: string, path: string, options: { body?: unknown; signal?: AbortSignal } = {}): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const response = await fetch(new URL(path, this.base), {
        method,
        headers: { authorization: `Bearer ${await this.#accessToken()}`, ...(options.body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: options.body === undefined ? undefined : JSON.stringify(options.body),
        signal: options.signal,
      });
      if (response.status === 401 && attempt === 1) {
        this.#token = undefined;
        continue;
      }
      const text = await response.text();
      if (response.status >= 400) {
        let detail = text;
        try {
          const problem = JSON.parse(text) as { detail?: string; title?: string };
          detail = problem.detail ?? problem.title ?? text;
        } catch {
          /* not JSON: the text as it is */
        }
        throw new ApiError(response.status, `${method} ${path}: HTTP ${response.status}: ${detail}`);
      }
      return (text ? JSON.parse(text) : undefined) as T;
    }
  }
}

/** One delivery to the local receiver, with the headers and body as given; never throws. */
async function forward(target: URL, delivery: Delivery): Promise<{ statusCode?: number; latencyMs: number; responseBody?: string; error?: string }> {
  const started = performance.now();
  try {
    const response = await fetch(target, { method: 'POST', headers: delivery.headers, body: delivery.body, redirect: 'manual', signal: AbortSignal.timeout(FORWARD_TIMEOUT_MS) });
    const text = await response.text();
    return { statusCode: response.status, latencyMs: Math.round(performance.now() - started), responseBody: text.slice(0, REPORTED_BODY_CHARS) };
  } catch (error) {
    const cause = (error as { cause?: { message?: string } }).cause?.message;
    const message = (error as Error).name === 'TimeoutError' ? `no answer within ${FORWARD_TIMEOUT_MS / 1000} s` : (cause ?? (error as Error).message);
    return { latencyMs: Math.round(performance.now() - started), error: message.slice(0, 1000) };
  }
}

export interface ListenSession {
  id: string;
  accountId: string;
  signingSecrets: Array<{ url: string | null; secret: string }>;
}

/** `  whsec_… of https://app.example.com/hooks`: the secrets a session's copies are signed with, one per line. */
export function signingSecretLines(session: ListenSession): string {
  return session.signingSecrets.map((s) => `  ${s.secret} of ${s.url ?? "the account's default secret"}\n`).join('');
}

/**
 * Takes the session's copies until `stop` aborts, forwards each to `target`, prints a line per call
 * and reports its answer. Ends the session when done (unless it ended by itself: then it throws).
 */
export async function relayDeliveries(io: CliIo, api: DeploymentApi, session: ListenSession, target: URL, stop: AbortSignal): Promise<void> {
  const path = `/v2/listen-sessions/${encodeURIComponent(session.id)}`;
  let ended = false;
  try {
    while (!stop.aborted) {
      let deliveries: Delivery[];
      try {
        deliveries = (await api.call<{ data: Delivery[] }>('GET', `${path}/deliveries?wait=${POLL_WAIT_S}`, { signal: stop })).data;
      } catch (error) {
        if (stop.aborted) break;
        if (error instanceof ApiError && error.status === 404) {
          ended = true;
          throw invalid(`the listen session ended (${error.message}); run rewards listen again`);
        }
        io.err(`rewards: polling ${api.base.origin} failed (${(error as Error).message}); trying again\n`);
        await new Promise((resolve) => setTimeout(resolve, RETRY_AFTER_ERROR_MS));
        continue;
      }
      for (const delivery of deliveries) {
        const result = await forward(target, delivery);
        const outcome = result.statusCode !== undefined ? `${result.statusCode} (${result.latencyMs} ms)` : `error: ${result.error} (${result.latencyMs} ms)`;
        io.out(`${new Date().toISOString()} ${delivery.event} ${delivery.notificationId} → ${outcome}\n`);
        try {
          await api.call('POST', `${path}/deliveries/${encodeURIComponent(delivery.notificationId)}/result`, { body: result });
        } catch (error) {
          io.err(`rewards: the answer to ${delivery.notificationId} could not be reported (${(error as Error).message})\n`);
        }
      }
    }
  } finally {
    if (!ended) await api.call('DELETE', path).catch((error: Error) => io.err(`rewards: the session could not be ended (${error.message}); it ends by itself within a minute\n`));
  }
}

/** The deployment: --api-url, else REWARDS_API_URL, else the running service the configuration names (checked to answer). */
export async function deploymentUrl(io: CliIo, apiUrl: string | undefined, effective: EffectiveSettings, start: string): Promise<URL> {
  const raw = apiUrl ?? io.env.REWARDS_API_URL;
  if (raw) return httpUrl(raw, apiUrl === undefined ? 'REWARDS_API_URL' : '--api-url');
  const { config, settings } = effective();
  const service = configuredServiceUrl(config, settings);
  await requireRunningService(service, start);
  return service.url;
}

async function listen(io: CliIo, options: ListenOptions, effective: EffectiveSettings): Promise<void> {
  const target = httpUrl(options.forwardTo, '--forward-to');
  const clientId = options.clientId ?? io.env.REWARDS_CLIENT_ID;
  const clientSecret = options.clientSecret ?? io.env.REWARDS_CLIENT_SECRET;
  if (!clientId || !clientSecret) throw invalid('give an OAuth client of your account: --client-id and --client-secret (or REWARDS_CLIENT_ID and REWARDS_CLIENT_SECRET)');
  const events = parseEvents(options.events);
  const base = await deploymentUrl(io, options.apiUrl, effective, 'Start the local service (npm start)');
  const api = new DeploymentApi(base, clientId, clientSecret);

  const session = await api.call<ListenSession>('POST', '/v2/listen-sessions', { body: { events } });
  io.out(
    `Ready! Forwarding events for account ${session.accountId} to ${target.href} (signing secret: one per line below; configure the one your receiver stands in for). Session ${session.id}; press Ctrl-C to stop.\n` +
      signingSecretLines(session),
  );

  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    await relayDeliveries(io, api, session, target, stop.signal);
  } finally {
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
  }
  io.out(`Stopped: listen session ${session.id} ended.\n`);
}

/** `rewards listen …`, added to the program by program.ts. Credentials and URL: options, else REWARDS_CLIENT_ID, REWARDS_CLIENT_SECRET, REWARDS_API_URL, else the configured local service. */
export function addListenCommand(program: Command, io: CliIo, effective: EffectiveSettings): void {
  program
    .command('listen')
    .description('forward the webhooks a deployment sends for your account to a local URL, signed as the real ones (no public URL needed); Ctrl-C stops')
    .requiredOption('--forward-to <url>', 'the local receiver, e.g. http://localhost:3000/hooks')
    .option('--events <list>', `comma-separated events to receive (default: ${REQUEST_EVENTS.join(',')})`)
    .option('--api-url <url>', "the deployment's URL, e.g. https://rewards.example.com (default: REWARDS_API_URL, else the service this configuration runs: PUBLIC_URL, else http://HOST:PORT)")
    .option('--client-id <id>', 'an OAuth client of your account with the subscriptions:write scope (default: REWARDS_CLIENT_ID)')
    .option('--client-secret <secret>', "that client's secret (default: REWARDS_CLIENT_SECRET)")
    .action((options: ListenOptions) => listen(io, options, effective));
}
