// needs: database
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as oidc from 'openid-client';
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { insertOAuthClient } from '../../src/storage/repositories/oauth-clients.js';
import { createClient } from '../../src/services/accounts.js';
import { testDialects } from '../support/databases.js';
import { REPRODUCED_GLOBAL_HOOKS } from '../../src/http/token-fast-path.js';
import { api, startTestApp, type ClientCredentials, type TestApp } from '../support/test-app.js';

async function postForm(url: string, fields: Record<string, string> | string, headers: Record<string, string> = {}) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: typeof fields === 'string' ? fields : new URLSearchParams(fields),
  });
  return { status: response.status, headers: response.headers, body: (await response.json()) as Record<string, any> };
}

function basic(id: string, secret: string): string {
  const encode = (s: string) => encodeURIComponent(s).replaceAll('%20', '+');
  return `Basic ${Buffer.from(`${encode(id)}:${encode(secret)}`).toString('base64')}`;
}

function assertNoStore(headers: Headers) {
  assert.equal(headers.get('cache-control'), 'no-store');
  assert.equal(headers.get('pragma'), 'no-cache');
}

for (const dialect of testDialects()) {
  describe(`POST /oauth/token [${dialect}]`, () => {
    let t: TestApp;
    let client: ClientCredentials;
    let tokenUrl: string;
    before(async () => {
      t = await startTestApp(dialect, { TOKEN_TTL: '15m' });
      client = await t.createClientAccount('acme', ['subscriptions:read', 'requests:write']);
      tokenUrl = `${t.url}/v2/oauth/token`;
    });
    after(() => t.close());

    describe('happy paths with a real OAuth client (openid-client)', () => {
      const discovery = () => ({ issuer: t.config.publicUrl, token_endpoint: tokenUrl });

      it('client_secret_post: token verifies against the JWKS with jose, RFC 9068 claims', async () => {
        const config = new oidc.Configuration(discovery(), client.clientId, undefined, oidc.ClientSecretPost(client.clientSecret));
        oidc.allowInsecureRequests(config);
        const tokens = await oidc.clientCredentialsGrant(config, { scope: 'subscriptions:read' });
        assert.equal(tokens.token_type.toLowerCase(), 'bearer');
        assert.equal(tokens.expires_in, 900);
        assert.equal(tokens.scope, 'subscriptions:read');

        const jwks = createRemoteJWKSet(new URL(`${t.url}/.well-known/jwks.json`));
        const { payload, protectedHeader } = await jwtVerify(tokens.access_token, jwks, {
          issuer: t.config.publicUrl,
          audience: t.config.publicUrl,
          typ: 'at+jwt',
          algorithms: ['EdDSA'],
        });
        assert.equal(protectedHeader.typ, 'at+jwt');
        assert.ok(protectedHeader.kid);
        for (const claim of ['iss', 'sub', 'aud', 'exp', 'iat', 'jti', 'client_id', 'scope']) assert.ok(claim in payload, claim);
        assert.equal(payload.sub, client.clientId);
        assert.equal(payload.client_id, client.clientId);
        assert.equal(payload.scope, 'subscriptions:read');
        assert.equal(payload.exp! - payload.iat!, 900);
      });

      it('client_secret_basic with a secret holding +, / and spaces (form-urlencoded before base64)', async () => {
        const secret = 'a+b/c d+/ e==';
        const odd = await insertOAuthClient(t.deps.db, { accountId: client.accountId, scopes: ['requests:read'], secret });
        const config = new oidc.Configuration(discovery(), odd.clientId, undefined, oidc.ClientSecretBasic(secret));
        oidc.allowInsecureRequests(config);
        const tokens = await oidc.clientCredentialsGrant(config, { scope: 'requests:read' });
        assert.equal(tokens.scope, 'requests:read');
        // The same secret sent without form-encoding (raw '+') must not authenticate as a space.
        const raw = await postForm(
          tokenUrl,
          { grant_type: 'client_credentials', scope: 'requests:read' },
          {
            authorization: `Basic ${Buffer.from(`${odd.clientId}:${secret}`).toString('base64')}`,
          },
        );
        assert.equal(raw.status, 401);
      });

      it('v1 takes a JSON body and grants every allowed scope', async () => {
        const response = await fetch(`${t.url}/v1/oauth/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ client_id: client.clientId, client_secret: client.clientSecret }),
        });
        assert.equal(response.status, 200);
        assertNoStore(response.headers);
        const body = (await response.json()) as Record<string, any>;
        assert.deepEqual(Object.keys(body).sort(), ['access_token', 'expires_in', 'token_type']);
        assert.equal(body.token_type, 'Bearer');
        const claims = JSON.parse(Buffer.from(body.access_token.split('.')[1], 'base64url').toString());
        assert.equal(claims.scope, 'subscriptions:read requests:write');
      });

      it('a v2 token response carries no-store headers and the granted scope', async () => {
        const response = await postForm(tokenUrl, {
          grant_type: 'client_credentials',
          client_id: client.clientId,
          client_secret: client.clientSecret,
          scope: 'requests:write subscriptions:read',
        });
        assert.equal(response.status, 200);
        assertNoStore(response.headers);
        assert.equal(response.body.scope, 'requests:write subscriptions:read');
      });
    });

    describe('RFC 6749 §5.2 errors', () => {
      const valid = () => ({ grant_type: 'client_credentials', client_id: client.clientId, client_secret: client.clientSecret, scope: 'subscriptions:read' });
      const cases: Array<[string, () => Promise<Awaited<ReturnType<typeof postForm>>>, number, string]> = [
        [
          'missing grant_type',
          () => {
            const { grant_type: _, ...rest } = valid();
            return postForm(tokenUrl, rest);
          },
          400,
          'invalid_request',
        ],
        [
          'missing client_id',
          () => {
            const { client_id: _, ...rest } = valid();
            return postForm(tokenUrl, rest);
          },
          400,
          'invalid_request',
        ],
        [
          'missing client_secret',
          () => {
            const { client_secret: _, ...rest } = valid();
            return postForm(tokenUrl, rest);
          },
          400,
          'invalid_request',
        ],
        ['duplicated parameter', () => postForm(tokenUrl, `${new URLSearchParams(valid())}&scope=requests:write`), 400, 'invalid_request'],
        ['two authentication methods', () => postForm(tokenUrl, valid(), { authorization: basic(client.clientId, client.clientSecret) }), 400, 'invalid_request'],
        ['unsupported grant type', () => postForm(tokenUrl, { ...valid(), grant_type: 'password' }), 400, 'unsupported_grant_type'],
        [
          'missing scope',
          () => {
            const { scope: _, ...rest } = valid();
            return postForm(tokenUrl, rest);
          },
          400,
          'invalid_scope',
        ],
        ['unknown scope', () => postForm(tokenUrl, { ...valid(), scope: 'subscriptions:read teleport' }), 400, 'invalid_scope'],
        ['scope not allowed for the client', () => postForm(tokenUrl, { ...valid(), scope: 'admin' }), 400, 'invalid_scope'],
        ['wrong secret (body)', () => postForm(tokenUrl, { ...valid(), client_secret: 'rrs_cs_wrong' }), 401, 'invalid_client'],
        ['unknown client', () => postForm(tokenUrl, { ...valid(), client_id: 'cli_nobody' }), 401, 'invalid_client'],
      ];
      for (const [name, send, status, error] of cases) {
        it(`${name} → ${status} ${error}`, async () => {
          const response = await send();
          assert.equal(response.status, status);
          assert.equal(response.body.error, error);
          assert.equal(typeof response.body.error_description, 'string');
          assertNoStore(response.headers);
          assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
        });
      }

      it('invalid_client via Basic is a 401 with WWW-Authenticate: Basic', async () => {
        const response = await postForm(tokenUrl, { grant_type: 'client_credentials', scope: 'subscriptions:read' }, { authorization: basic(client.clientId, 'nope') });
        assert.equal(response.status, 401);
        assert.equal(response.body.error, 'invalid_client');
        assert.match(response.headers.get('www-authenticate') ?? '', /^Basic realm="rewards"/);
        const body = await postForm(tokenUrl, { ...valid(), client_secret: 'nope' });
        assert.equal(body.headers.get('www-authenticate'), null);
      });

      it('invalid_scope says what this client may ask for, the scope most likely meant, and that scopes are separated by spaces', async () => {
        const holds = 'this client may ask for: subscriptions:read requests:write (space-separated)';
        const expectations: Array<[string | undefined, string]> = [
          [undefined, `scope is required; ${holds}`],
          ['', `scope is required; ${holds}`],
          ['request:write', `unknown scope: request:write (did you mean requests:write?); ${holds}`],
          ['subscriptions:read requests:wrte', `unknown scope: requests:wrte (did you mean requests:write?); ${holds}`],
          ['Requests:Write', `unknown scope: Requests:Write (did you mean requests:write?); ${holds}`],
          ['teleport', `unknown scope: teleport; ${holds}`],
          ['requests:write,subscriptions:read', `scopes are separated by spaces, not commas: send "requests:write subscriptions:read"; ${holds}`],
          ['requests:write, subscriptions:read', `scopes are separated by spaces, not commas: send "requests:write subscriptions:read"; ${holds}`],
          ['admin', `scope not allowed for this client: admin; ${holds}`],
          ['events:read requests:write', `scope not allowed for this client: events:read; ${holds}`],
        ];
        for (const [scope, description] of expectations) {
          const { scope: _, ...rest } = valid();
          const response = await postForm(tokenUrl, scope === undefined ? rest : { ...rest, scope });
          assert.equal(response.status, 400, String(scope));
          assert.deepEqual(response.body, { error: 'invalid_scope', error_description: description }, String(scope));
        }
        // Before the client has authenticated, nothing about its scopes is said.
        const wrongSecret = await postForm(tokenUrl, { ...valid(), client_secret: 'rrs_cs_wrong', scope: 'request:write' });
        assert.equal(wrongSecret.body.error, 'invalid_client');
        assert.doesNotMatch(wrongSecret.body.error_description, /scope/);
      });

      it('a client without any scope is unauthorized_client', async () => {
        const noScopes = await createClient(t.deps.db, client.accountId, []);
        const response = await postForm(tokenUrl, { grant_type: 'client_credentials', client_id: noScopes.client.clientId, client_secret: noScopes.clientSecret, scope: 'requests:read' });
        assert.equal(response.status, 400);
        assert.equal(response.body.error, 'unauthorized_client');
      });

      it('wrong content types and malformed bodies are 400 invalid_request', async () => {
        const json = await fetch(tokenUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(valid()) });
        assert.equal(json.status, 400);
        assert.equal((await json.json()).error, 'invalid_request');
        assertNoStore(json.headers);
        const v1Form = await postForm(`${t.url}/v1/oauth/token`, valid());
        assert.equal(v1Form.status, 400);
        assert.equal(v1Form.body.error, 'invalid_request');
        const broken = await fetch(`${t.url}/v1/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"client_id": ' });
        assert.equal(broken.status, 400);
        assert.equal((await broken.json()).error, 'invalid_request');
        assertNoStore(broken.headers);
        const array = await fetch(`${t.url}/v1/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '[1,2]' });
        assert.equal(array.status, 400);
        const nonString = await fetch(`${t.url}/v1/oauth/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ client_id: 12, client_secret: client.clientSecret }),
        });
        assert.equal(nonString.status, 400);
      });

      it('a disabled client or account gets invalid_client', async () => {
        const other = await t.createClientAccount(undefined, ['requests:read']);
        const form = { grant_type: 'client_credentials', client_id: other.clientId, client_secret: other.clientSecret, scope: 'requests:read' };
        assert.equal((await postForm(tokenUrl, form)).status, 200);
        const admin = await t.token(t.operator);
        assert.equal((await api(t.url, 'PATCH', `/v2/admin/accounts/${other.accountId}`, { token: admin, body: { active: false } })).status, 200);
        const refused = await postForm(tokenUrl, form);
        assert.equal(refused.status, 401);
        assert.equal(refused.body.error, 'invalid_client');
      });

      it('invalid_client says in words what is wrong and what to do: wrong credentials, a deactivated client, a deactivated account', async () => {
        const other = await t.createClientAccount(undefined, ['requests:read']);
        const form = { grant_type: 'client_credentials', client_id: other.clientId, client_secret: other.clientSecret, scope: 'requests:read' };
        const admin = await t.token(t.operator);
        const described = async (fields: Record<string, string>, version: 'v1' | 'v2' = 'v2') => {
          const response =
            version === 'v2'
              ? await postForm(tokenUrl, fields)
              : await fetch(`${t.url}/v1/oauth/token`, {
                  method: 'POST',
                  headers: { 'content-type': 'application/json' },
                  body: JSON.stringify({ client_id: fields.client_id, client_secret: fields.client_secret }),
                }).then(async (r) => ({ status: r.status, body: (await r.json()) as Record<string, any> }));
          assert.equal(response.status, 401);
          return response.body;
        };
        const wrong = { error: 'invalid_client', error_description: 'the client id or secret is wrong; check both, or ask the operator for a new secret' };
        assert.deepEqual(await described({ ...form, client_secret: 'rrs_cs_wrong' }), wrong);
        assert.deepEqual(await described({ ...form, client_id: 'cli_nobody' }), wrong);
        assert.deepEqual(await described({ ...form, client_secret: 'rrs_cs_wrong' }, 'v1'), wrong);

        const clientAt = `/v2/admin/accounts/${other.accountId}/clients/${other.clientId}`;
        assert.equal((await api(t.url, 'PATCH', clientAt, { token: admin, body: { active: false } })).status, 200);
        const clientOff = { error: 'invalid_client', error_description: 'this client is deactivated; ask the operator to reactivate it' };
        assert.deepEqual(await described(form), clientOff);
        assert.deepEqual(await described(form, 'v1'), clientOff);
        // A wrong secret is told as a wrong secret, whatever the client's state: only its owner learns that it is off.
        assert.deepEqual(await described({ ...form, client_secret: 'rrs_cs_wrong' }), wrong);

        assert.equal((await api(t.url, 'PATCH', clientAt, { token: admin, body: { active: true } })).status, 200);
        assert.equal((await api(t.url, 'PATCH', `/v2/admin/accounts/${other.accountId}`, { token: admin, body: { active: false } })).status, 200);
        const accountOff = { error: 'invalid_client', error_description: "this client's account is deactivated; ask the operator to reactivate it" };
        assert.deepEqual(await described(form), accountOff);
        assert.deepEqual(await described(form, 'v1'), accountOff);

        // Basic credentials that cannot be read say how they are made.
        const basicOf = async (credentials: string) =>
          (await postForm(tokenUrl, { grant_type: 'client_credentials', scope: 'requests:read' }, { authorization: `Basic ${Buffer.from(credentials).toString('base64')}` })).body;
        assert.deepEqual(await basicOf('no-colon'), { error: 'invalid_client', error_description: 'the Basic credentials are not base64 of the client id and secret joined by a colon' });
        assert.deepEqual(await basicOf('cli_x:%E0%A4%A'), {
          error: 'invalid_client',
          error_description: 'the Basic credentials are not form-urlencoded: encode the client id and secret before joining them (RFC 6749 §2.3.1)',
        });
      });
    });

    describe('the server fast path and the Fastify routes answer alike', () => {
      // A listening server answers POST /v1|v2/oauth/token before Fastify (token-fast-path.ts);
      // `inject`, a trailing slash or a query string reach the Fastify routes instead.
      const cases = (): Array<[string, { path: string; headers: Record<string, string>; body: string }]> => {
        const form = (fields: Record<string, string>) => ({ 'content-type': 'application/x-www-form-urlencoded', body: new URLSearchParams(fields).toString() });
        const valid = { grant_type: 'client_credentials', client_id: client.clientId, client_secret: client.clientSecret, scope: 'subscriptions:read' };
        const v2 = (fields: Record<string, string>, headers: Record<string, string> = {}) => {
          const { body, ...contentType } = form(fields);
          return { path: '/v2/oauth/token', headers: { ...contentType, ...headers }, body };
        };
        return [
          ['v2 success', v2(valid)],
          ['v2 Basic success', v2({ grant_type: 'client_credentials', scope: 'subscriptions:read' }, { authorization: basic(client.clientId, client.clientSecret) })],
          ['v2 Basic failure', v2({ grant_type: 'client_credentials', scope: 'subscriptions:read' }, { authorization: basic(client.clientId, 'nope') })],
          ['v2 duplicated parameter', { ...v2(valid), body: `${new URLSearchParams(valid)}&scope=requests:write` }],
          ['v2 missing grant_type', v2({ client_id: client.clientId, client_secret: client.clientSecret })],
          ['v2 scope near miss', v2({ ...valid, scope: 'request:write' })],
          ['v2 comma-separated scopes', v2({ ...valid, scope: 'requests:write,subscriptions:read' })],
          ['v2 scope missing', v2({ grant_type: 'client_credentials', client_id: client.clientId, client_secret: client.clientSecret })],
          ['v2 JSON body', { path: '/v2/oauth/token', headers: { 'content-type': 'application/json' }, body: JSON.stringify(valid) }],
          ['v2 no content type', { path: '/v2/oauth/token', headers: {}, body: '' }],
          [
            'v1 success',
            { path: '/v1/oauth/token', headers: { 'content-type': 'application/json; charset=utf-8' }, body: JSON.stringify({ client_id: client.clientId, client_secret: client.clientSecret }) },
          ],
          ['v1 malformed JSON', { path: '/v1/oauth/token', headers: { 'content-type': 'application/json' }, body: '{"client_id": ' }],
          ['v1 form body', { ...v2(valid), path: '/v1/oauth/token' }],
        ];
      };
      const comparable = (status: number, headers: Record<string, string | null>, text: string) => {
        const body = JSON.parse(text) as Record<string, unknown>;
        // Tokens minted in different seconds differ in iat/exp/jti: compare their presence only.
        if (typeof body.access_token === 'string') body.access_token = 'a JWT';
        return { status, body, contentType: headers['content-type'], cacheControl: headers['cache-control'], pragma: headers.pragma, wwwAuthenticate: headers['www-authenticate'] ?? null };
      };

      it('every outcome, over HTTP (fast path) and through inject (Fastify route)', async () => {
        // Set by the HTTP server itself (or by inject), not by the service.
        const transport = new Set(['date', 'connection', 'keep-alive', 'transfer-encoding']);
        const headerNames = (headers: Record<string, string>) =>
          Object.keys(headers)
            .filter((name) => !transport.has(name))
            .sort();
        for (const [name, request] of cases()) {
          const overHttp = await fetch(`${t.url}${request.path}`, { method: 'POST', headers: request.headers, body: request.body });
          const httpHeaders = Object.fromEntries(overHttp.headers);
          const viaFastify = await t.app.inject({ method: 'POST', url: request.path, headers: request.headers, payload: request.body });
          const fastifyHeaders = Object.fromEntries(Object.entries(viaFastify.headers).map(([k, v]) => [k, String(v)]));
          assert.deepEqual(comparable(overHttp.status, httpHeaders, await overHttp.text()), comparable(viaFastify.statusCode, fastifyHeaders, viaFastify.body), name);
          assert.ok(httpHeaders['x-request-id'] && fastifyHeaders['x-request-id'], `${name}: x-request-id on both`);
          assert.deepEqual(headerNames(httpHeaders), headerNames(fastifyHeaders), `${name}: the same headers`);
        }
      });

      it('every hook Fastify runs for the token routes is one the fast path reproduces', () => {
        // Fastify's own report of the hooks each route runs, inherited ones included.
        const report = t.app.printRoutes({ method: 'POST', includeHooks: true, commonPrefix: false }).split('\n');
        for (const path of ['/v1/oauth/token', '/v2/oauth/token']) {
          const at = report.findIndex((line) => line.endsWith(` ${path} (POST)`));
          assert.ok(at >= 0, `${path} is in the route report`);
          const hooks: Record<string, string[]> = {};
          for (const line of report.slice(at + 1)) {
            const hook = /^[│ ]*• \((\w+)\) (\[.*\])$/.exec(line);
            if (!hook) break;
            hooks[hook[1]!] = (JSON.parse(hook[2]!) as string[]).map((fn) => fn.replace(/\(\)$/, ''));
          }
          assert.deepEqual(hooks, REPRODUCED_GLOBAL_HOOKS, `${path}: a hook the server fast path (token-fast-path.ts) does not reproduce`);
        }
      });

      it('a trailing slash or a query string reaches the Fastify route and gets a token too', async () => {
        const fields = { grant_type: 'client_credentials', client_id: client.clientId, client_secret: client.clientSecret, scope: 'subscriptions:read' };
        for (const path of ['/v2/oauth/token/', '/v2/oauth/token?via=query']) {
          const response = await postForm(`${t.url}${path}`, fields);
          assert.equal(response.status, 200, path);
          assertNoStore(response.headers);
          assert.equal(response.body.scope, 'subscriptions:read');
        }
      });

      it('echoes a given X-Request-Id and makes one otherwise', async () => {
        const fields = { grant_type: 'client_credentials', client_id: client.clientId, client_secret: client.clientSecret, scope: 'subscriptions:read' };
        assert.equal((await postForm(tokenUrl, fields, { 'x-request-id': 'trace-123' })).headers.get('x-request-id'), 'trace-123');
        assert.match((await postForm(tokenUrl, fields)).headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
      });

      it('a body over 64 KiB is a 413 invalid_request, announced or streamed', async () => {
        const big = `grant_type=client_credentials&pad=${'x'.repeat(70 * 1024)}`;
        const announced = await postForm(tokenUrl, big);
        assert.equal(announced.status, 413);
        assert.equal(announced.body.error, 'invalid_request');
        assertNoStore(announced.headers);
        // Chunked: no Content-Length, so the limit is found while reading.
        const chunks = [Buffer.from(big.slice(0, 40_000)), Buffer.from(big.slice(40_000))];
        const streamed = await fetch(tokenUrl, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new ReadableStream({
            pull(controller) {
              const next = chunks.shift();
              if (next) controller.enqueue(next);
              else controller.close();
            },
          }),
          duplex: 'half',
        } as RequestInit);
        assert.equal(streamed.status, 413);
        assert.equal(((await streamed.json()) as { error: string }).error, 'invalid_request');
      });
    });

    it('rotating a client secret keeps the previous one valid during the grace period', async () => {
      const own = await t.createClientAccount(undefined, ['requests:read']);
      const admin = await t.token(t.operator);
      const rotate = () => api(t.url, 'POST', `/v2/admin/accounts/${own.accountId}/clients/${own.clientId}/rotate-secret`, { token: admin });
      const rotated = (await rotate()).body;
      assert.notEqual(rotated.client_secret, own.clientSecret);
      assert.match(rotated.client_secret, /^rrs_cs_[A-Za-z0-9_-]{43}$/);
      for (const secret of [own.clientSecret, rotated.client_secret]) {
        const response = await postForm(tokenUrl, { grant_type: 'client_credentials', client_id: own.clientId, client_secret: secret, scope: 'requests:read' });
        assert.equal(response.status, 200);
      }
      // A second rotation retires the first secret for good.
      assert.equal((await rotate()).status, 200);
      const old = await postForm(tokenUrl, { grant_type: 'client_credentials', client_id: own.clientId, client_secret: own.clientSecret, scope: 'requests:read' });
      assert.equal(old.status, 401);
    });

    it('stores only a SHA-256 of the secret', async () => {
      const row = await t.deps.db.selectFrom('oauth_clients').selectAll().where('client_id', '=', client.clientId).executeTakeFirstOrThrow();
      assert.ok(!JSON.stringify(row).includes(client.clientSecret));
      assert.match(row.secret_hash, /^[0-9a-f]{64}$/);
    });

    it('key rotation: new tokens use the new key, old tokens stay valid until the old key expires', async () => {
      const before = await t.token(client);
      const oldKid = decodeProtectedHeader(before).kid;
      const { kid } = await t.deps.keys.rotate(t.config.tokenTtlMs);
      const afterRotation = await t.token(client);
      assert.equal(decodeProtectedHeader(afterRotation).kid, kid);
      assert.notEqual(kid, oldKid);
      const jwks = (await (await fetch(`${t.url}/.well-known/jwks.json`)).json()) as { keys: Array<{ kid: string; kty: string; crv: string; d?: string }> };
      assert.deepEqual(jwks.keys.map((k) => k.kid).sort(), [kid, oldKid].sort());
      assert.ok(jwks.keys.every((k) => k.kty === 'OKP' && k.crv === 'Ed25519' && k.d === undefined));
      for (const token of [before, afterRotation]) {
        const me = await fetch(`${t.url}/v2/me`, { headers: { authorization: `Bearer ${token}` } });
        assert.equal(me.status, 200);
      }
      // Rotating with a zero grace retires every older key at once: their tokens stop verifying.
      await t.deps.keys.rotate(0);
      const stale = await fetch(`${t.url}/v2/me`, { headers: { authorization: `Bearer ${afterRotation}` } });
      assert.equal(stale.status, 401);
      assert.match(stale.headers.get('www-authenticate') ?? '', /error="invalid_token"/);
    });

    it('signing keys are stored encrypted', async () => {
      const rows = await t.deps.db.selectFrom('signing_keys').selectAll().execute();
      for (const row of rows) {
        assert.match(row.private_key_encrypted, /^v1\./);
        assert.ok(!row.private_key_encrypted.includes('PRIVATE KEY'));
      }
    });
  });
}
