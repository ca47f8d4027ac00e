import type { TypedApp } from '../../src/http/typed-app.js';
import { buildApp } from '../../src/app.js';
import { createClient } from '../../src/services/accounts.js';
import { ensureOperator } from '../../src/services/operator-bootstrap.js';
import { SCOPES } from '../../src/domain/tokens/scopes.js';
import type { TestDialect } from './databases.js';
import { startTestDatabase, type ClientCredentials, type TestDatabase, type TestDatabaseOptions } from './test-database.js';
import { forgetResponseChecker, responseChecker } from './openapi-responses.js';

export { startTestDatabase, type ClientCredentials, type TestDatabase };

export interface RegisteredRoute {
  method: string;
  url: string;
  scope: string | undefined;
  /** `config.secretBearing`: the route answers with Cache-Control: no-store. */
  secretBearing: boolean;
  /** The route's response schemas, by status. */
  response: Record<string, unknown> | undefined;
}

export interface TestApp extends TestDatabase {
  app: TypedApp;
  /** Base URL of the listening server, e.g. http://127.0.0.1:41234 */
  url: string;
  /** Every route the app registered: method, URL pattern and the scope it declares. */
  routes: RegisteredRoute[];
  operator: ClientCredentials;
  /** A v2 access token for the client (all of its scopes unless `scope` is given). */
  token(client: ClientCredentials, scope?: string): Promise<string>;
}

/** The real application on a loopback port over startTestDatabase, with the operator bootstrapped as on a first start. */
export async function startTestApp(dialect: TestDialect, env: Record<string, string> = {}, options: TestDatabaseOptions = {}): Promise<TestApp> {
  const database = await startTestDatabase(dialect, env, options);
  const { deps, dataDir } = database;
  const routes: RegisteredRoute[] = [];
  const app = await buildApp(deps, {
    onRoute: (route) => {
      for (const method of [route.method].flat()) {
        if (method !== 'HEAD') routes.push({ method, url: route.url, scope: route.config?.scope, secretBearing: route.config?.secretBearing === true, response: route.schema?.response });
      }
    },
  });
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  await ensureOperator(deps.db, dataDir, `${address}/v2/oauth/token`, { log: deps.log });
  const operatorRow = await deps.db.selectFrom('accounts').select('id').where('is_operator', '=', 1).executeTakeFirstOrThrow();
  // The bootstrap wrote the operator's secret to disk; tests use a second operator client instead.
  const operatorClient = await createClient(deps.db, operatorRow.id, [...SCOPES]);
  const operator = { accountId: operatorRow.id, clientId: operatorClient.client.clientId, clientSecret: operatorClient.clientSecret };

  return {
    ...database,
    app,
    url: address,
    routes,
    operator,
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
      forgetResponseChecker(address);
      await app.close();
      await database.close();
    },
  };
}

/**
 * fetch with a bearer token and a JSON body; returns status, headers and parsed body. The response
 * must be one the server's OpenAPI document describes for the operation and status (its schema
 * validates the body): otherwise the call throws (test/support/openapi-responses.ts).
 */
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
  const checker = await responseChecker(base);
  const mismatch = checker?.check(method, `${base}${path}`, response.status, response.headers.get('content-type'), text, body);
  if (mismatch) throw new Error(`undocumented response (fix the OpenAPI document or the route): ${mismatch}`);
  return { status: response.status, headers: response.headers, body };
}
