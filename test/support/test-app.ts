import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TypedApp } from '../../src/http/typed-app.js';
import { buildApp } from '../../src/app.js';
import { loadConfig, type Config } from '../../src/config.js';
import { createDeps, type Deps } from '../../src/deps.js';
import { createAccount, createClient } from '../../src/domain/accounts/accounts-service.js';
import { ensureOperator } from '../../src/domain/accounts/operator-bootstrap.js';
import { SCOPES } from '../../src/domain/tokens/scopes.js';
import { createPostgresSchema, postgresUrl, type TestDialect } from './databases.js';

export interface ClientCredentials {
  accountId: string;
  clientId: string;
  clientSecret: string;
}

export interface RegisteredRoute {
  method: string;
  url: string;
  scope: string | undefined;
}

export interface TestApp {
  dialect: TestDialect;
  app: TypedApp;
  deps: Deps;
  config: Config;
  /** Base URL of the listening server, e.g. http://127.0.0.1:41234 */
  url: string;
  /** Every route the app registered: method, URL pattern and the scope it declares. */
  routes: RegisteredRoute[];
  dataDir: string;
  operator: ClientCredentials;
  /** A new account with one client holding `scopes` (default: every scope but admin). */
  createClientAccount(name?: string, scopes?: string[]): Promise<ClientCredentials>;
  /** A v2 access token for the client (all of its scopes unless `scope` is given). */
  token(client: ClientCredentials, scope?: string): Promise<string>;
  close(): Promise<void>;
}

/**
 * Starts the real application on a loopback port against a fresh database (a temporary SQLite
 * file, or a new PostgreSQL schema), with the operator bootstrapped as on a first start.
 */
export async function startTestApp(dialect: TestDialect, env: Record<string, string> = {}): Promise<TestApp> {
  const dataDir = mkdtempSync(join(tmpdir(), 'rewards-test-'));
  const pgSchema = dialect === 'postgres' ? await createPostgresSchema() : undefined;
  const config = loadConfig({
    DATA_DIR: dataDir,
    DATABASE_URL: dialect === 'postgres' ? postgresUrl() : `sqlite:${join(dataDir, 'rewards.db')}`,
    SECRET_KEY: randomBytes(32).toString('base64'),
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    PORT: '0',
    PUBLIC_URL: 'http://127.0.0.1:8080',
    CALLBACK_ALLOW_PRIVATE_NETWORKS: 'true',
    ...env,
  });
  const deps = await createDeps(config, { schema: pgSchema?.schema });
  const routes: RegisteredRoute[] = [];
  const app = await buildApp(deps, {
    onRoute: (route) => {
      for (const method of [route.method].flat()) if (method !== 'HEAD') routes.push({ method, url: route.url, scope: route.config?.scope });
    },
  });
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  await ensureOperator(deps.db, dataDir, `${address}/v2/oauth/token`);
  const operatorRow = await deps.db.selectFrom('accounts').select('id').where('is_operator', '=', 1).executeTakeFirstOrThrow();
  // The bootstrap wrote the operator's secret to disk; tests use a second operator client instead.
  const operatorClient = await createClient(deps.db, operatorRow.id, [...SCOPES]);
  const operator = { accountId: operatorRow.id, clientId: operatorClient.client.clientId, clientSecret: operatorClient.clientSecret };

  let counter = 0;
  const testApp: TestApp = {
    dialect,
    app,
    deps,
    config,
    url: address,
    routes,
    dataDir,
    operator,
    async createClientAccount(name, scopes) {
      counter += 1;
      const account = await createAccount(deps.db, name ?? `account-${counter}-${randomBytes(3).toString('hex')}`);
      const issued = await createClient(deps.db, account.id, scopes ?? SCOPES.filter((s) => s !== 'admin'));
      return { accountId: account.id, clientId: issued.client.clientId, clientSecret: issued.clientSecret };
    },
    async token(client, scope) {
      const allowed = (await deps.db.selectFrom('oauth_clients').select('scopes').where('client_id', '=', client.clientId).executeTakeFirstOrThrow()).scopes;
      const response = await fetch(`${address}/v2/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'client_credentials', client_id: client.clientId, client_secret: client.clientSecret, scope: scope ?? allowed }),
      });
      if (response.status !== 200) throw new Error(`token request failed: ${response.status} ${await response.text()}`);
      return ((await response.json()) as { access_token: string }).access_token;
    },
    async close() {
      await app.close();
      await deps.close();
      await pgSchema?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return testApp;
}

/** fetch with a bearer token and a JSON body; returns status, headers and parsed body. */
export async function api(
  base: string,
  method: string,
  path: string,
  options: { token?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<{ status: number; headers: Headers; body: any }> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.body !== undefined) headers['content-type'] ??= 'application/json';
  const response = await fetch(`${base}${path}`, {
    method,
    headers,
    body: options.body === undefined ? undefined : typeof options.body === 'string' ? options.body : JSON.stringify(options.body),
  });
  const text = await response.text();
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    /* not JSON: keep the text */
  }
  return { status: response.status, headers: response.headers, body };
}
