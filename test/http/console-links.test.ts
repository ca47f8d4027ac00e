// needs: database
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { buildApp } from '../../src/app.js';
import { CONSOLE_LINK_GRANT_TYPE, hashConsoleLinkCode } from '../../src/domain/tokens/console-link-code.js';
import { testDialects } from '../support/databases.js';
import { api, startTestApp, type ClientCredentials, type TestApp } from '../support/test-app.js';

const TOKEN_FORM = { 'content-type': 'application/x-www-form-urlencoded' };

/** POST /v2/oauth/token with a form body; `path` may add a trailing slash to reach the Fastify route instead of the server's fast path. */
async function tokenRequest(base: string, form: Record<string, string>, headers: Record<string, string> = {}, path = '/v2/oauth/token') {
  const response = await fetch(`${base}${path}`, { method: 'POST', headers: { ...TOKEN_FORM, ...headers }, body: new URLSearchParams(form) });
  return { status: response.status, headers: response.headers, body: (await response.json()) as Record<string, any> };
}

const exchange = (base: string, code: string, extra: Record<string, string> = {}, path?: string) => tokenRequest(base, { grant_type: CONSOLE_LINK_GRANT_TYPE, code, ...extra }, {}, path);

const codeOf = (url: string) => {
  const match = /#link=(rrs_cl_[A-Za-z0-9_-]{43})$/.exec(url);
  assert.ok(match, url);
  return match[1]!;
};

for (const dialect of testDialects()) {
  describe(`console links [${dialect}]`, () => {
    let t: TestApp;
    let operatorToken: string;
    let acme: ClientCredentials;
    let other: ClientCredentials;

    const createLink = (accountId: string, body?: unknown, token = operatorToken) =>
      api(t.url, 'POST', `/v2/admin/accounts/${accountId}/console-links`, { token, ...(body === undefined ? {} : { body }) });

    before(async () => {
      t = await startTestApp(dialect);
      operatorToken = await t.token(t.operator, 'admin');
      acme = await t.createClientAccount('console-acme');
      other = await t.createClientAccount('console-other');
    });
    after(() => t.close());

    it('an operator makes a link: 201 with a URL under PUBLIC_URL/console/ holding the code in its fragment, a 10-minute expiry and the token ttl', async () => {
      const created = await createLink(acme.accountId);
      assert.equal(created.status, 201, JSON.stringify(created.body));
      assert.deepEqual(Object.keys(created.body).sort(), ['expiresAt', 'id', 'tokenTtlSeconds', 'url']);
      assert.match(created.body.id, /^cln_/);
      assert.equal(created.headers.get('location'), `/v2/admin/accounts/${acme.accountId}/console-links/${created.body.id}`);
      assert.ok(created.body.url.startsWith(`${t.config.publicUrl}/console/#link=rrs_cl_`), created.body.url);
      assert.equal(created.body.tokenTtlSeconds, 3600);
      const expiresIn = Date.parse(created.body.expiresAt) - Date.now();
      assert.ok(expiresIn > 9 * 60_000 && expiresIn <= 10 * 60_000, created.body.expiresAt);
      assert.equal(created.headers.get('cache-control'), 'no-store');
      // Only the SHA-256 of the code is stored.
      const code = codeOf(created.body.url);
      const rows = await t.deps.db.selectFrom('console_links').selectAll().where('account_id', '=', acme.accountId).execute();
      assert.ok(rows.some((row) => row.code_hash === hashConsoleLinkCode(code)));
      assert.ok(!JSON.stringify(rows).includes(code.slice(7)));
      const custom = await createLink(acme.accountId, { ttl: '30m' });
      assert.equal(custom.body.tokenTtlSeconds, 1800);
    });

    it('refuses a non-operator (403), an unknown account (404), an inactive one (409), a ttl over 24h or malformed (400)', async () => {
      const clientToken = await t.token(acme);
      const forbidden = await createLink(acme.accountId, {}, clientToken);
      assert.equal(forbidden.status, 403);
      assert.match(String(forbidden.headers.get('www-authenticate')), /insufficient_scope/);
      assert.equal((await createLink('acc_unknown')).status, 404);
      const tooLong = await createLink(acme.accountId, { ttl: '25h' });
      assert.equal(tooLong.status, 400);
      assert.equal(tooLong.body.errors[0].path, 'body.ttl');
      assert.equal((await createLink(acme.accountId, { ttl: '24h' })).status, 201);
      assert.equal((await createLink(acme.accountId, { ttl: 'soon' })).status, 400);
      assert.equal((await createLink(acme.accountId, { ttl: '1h', extra: 1 })).status, 400);
      const inactive = await t.createClientAccount();
      await api(t.url, 'PATCH', `/v2/admin/accounts/${inactive.accountId}`, { token: operatorToken, body: { active: false } });
      assert.equal((await createLink(inactive.accountId)).status, 409);
    });

    it('the code is exchanged once for a token of the account: /v2/me and /v2/subscriptions work, admin routes do not', async () => {
      const code = codeOf((await createLink(acme.accountId, { ttl: '2h' })).body.url);
      const granted = await exchange(t.url, code);
      assert.equal(granted.status, 200, JSON.stringify(granted.body));
      assert.equal(granted.headers.get('cache-control'), 'no-store');
      assert.equal(granted.body.token_type, 'Bearer');
      assert.equal(granted.body.expires_in, 7200);
      assert.equal(granted.body.scope, 'subscriptions:read subscriptions:write requests:read requests:write events:read events:write');
      const token = granted.body.access_token as string;
      const claims = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString());
      assert.equal(claims.exp - claims.iat, 7200);

      const me = await api(t.url, 'GET', '/v2/me', { token });
      assert.equal(me.status, 200);
      assert.equal(me.body.accountId, acme.accountId);
      assert.match(me.body.clientId, /^console-link:cln_/);
      assert.ok(!me.body.scopes.includes('admin'));

      const created = await api(t.url, 'POST', '/v2/subscriptions', { token, body: { event: 'registered-request', callback: { url: 'http://127.0.0.1:9/hook' } } });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const listed = await api(t.url, 'GET', '/v2/subscriptions', { token });
      assert.deepEqual(
        listed.body.map((s: { _id: string }) => s._id),
        [created.body._id],
      );
      // The account's own client sees what the console made: same tenant.
      const viaClient = await api(t.url, 'GET', '/v2/subscriptions', { token: await t.token(acme) });
      assert.deepEqual(
        viaClient.body.map((s: { _id: string }) => s._id),
        [created.body._id],
      );
      // Another account stays out of reach.
      assert.equal((await api(t.url, 'GET', `/v2/subscriptions?accountId=${other.accountId}`, { token })).status, 404);
      for (const path of ['/v2/admin/accounts', `/v2/admin/accounts/${acme.accountId}`]) {
        assert.equal((await api(t.url, 'GET', path, { token })).status, 403, path);
      }
      assert.equal((await createLink(acme.accountId, {}, token)).status, 403);

      // Second exchange (in the same second, so a remembered answer would show): invalid_grant.
      const again = await exchange(t.url, code);
      assert.equal(again.status, 400);
      assert.equal(again.body.error, 'invalid_grant');
      assert.equal(again.headers.get('cache-control'), 'no-store');
      const viaFastify = await exchange(t.url, code, {}, '/v2/oauth/token/');
      assert.equal(viaFastify.body.error, 'invalid_grant');
    });

    it('an unknown, expired or already used code, or one of an account deactivated since, is invalid_grant', async () => {
      assert.equal((await exchange(t.url, `rrs_cl_${'A'.repeat(43)}`)).body.error, 'invalid_grant');
      const expired = codeOf((await createLink(acme.accountId)).body.url);
      await t.deps.db
        .updateTable('console_links')
        .set({ expires_at: Date.now() - 1 })
        .where('code_hash', '=', hashConsoleLinkCode(expired))
        .execute();
      const refused = await exchange(t.url, expired);
      assert.equal(refused.status, 400);
      assert.equal(refused.body.error, 'invalid_grant');

      const later = await t.createClientAccount();
      const code = codeOf((await createLink(later.accountId)).body.url);
      await api(t.url, 'PATCH', `/v2/admin/accounts/${later.accountId}`, { token: operatorToken, body: { active: false } });
      assert.equal((await exchange(t.url, code)).body.error, 'invalid_grant');
      // Reactivated within the 10 minutes: the code was not spent by the refusal.
      await api(t.url, 'PATCH', `/v2/admin/accounts/${later.accountId}`, { token: operatorToken, body: { active: true } });
      assert.equal((await exchange(t.url, code)).status, 200);
    });

    it("an operator lists the links (never a code) and revokes one: its session is refused at once, an unused code is invalid_grant; another account's link is a 404", async () => {
      const account = await t.createClientAccount();
      const used = await createLink(account.accountId, { ttl: '30m' });
      const unused = await createLink(account.accountId);
      const granted = await exchange(t.url, codeOf(used.body.url));
      const session = granted.body.access_token as string;
      assert.equal((await api(t.url, 'GET', '/v2/subscriptions', { token: session })).status, 200);

      const listed = await api(t.url, 'GET', `/v2/admin/accounts/${account.accountId}/console-links`, { token: operatorToken });
      assert.equal(listed.status, 200);
      assert.deepEqual(
        listed.body.map((link: { id: string }) => link.id),
        [used.body.id, unused.body.id],
      );
      const [usedState, unusedState] = listed.body;
      assert.ok(usedState.usedAt && usedState.sessionExpiresAt, JSON.stringify(usedState));
      assert.equal(Date.parse(usedState.sessionExpiresAt) - Date.parse(usedState.usedAt), 30 * 60_000);
      assert.equal(unusedState.usedAt, null);
      assert.equal(unusedState.revokedAt, null);
      assert.ok(!JSON.stringify(listed.body).includes(codeOf(used.body.url).slice(7)));
      const page = await api(t.url, 'GET', `/v2/admin/accounts/${account.accountId}/console-links?limit=1`, { token: operatorToken });
      assert.deepEqual([page.body.data.length, page.body.nextCursor], [1, used.body.id]);

      const revoke = (accountId: string, linkId: string) => api(t.url, 'DELETE', `/v2/admin/accounts/${accountId}/console-links/${linkId}`, { token: operatorToken });
      assert.equal((await revoke(other.accountId, used.body.id)).status, 404, "another account's link under this path");
      assert.equal((await api(t.url, 'GET', '/v2/subscriptions', { token: session })).status, 200, 'a refused revocation changed nothing');
      assert.equal((await revoke(account.accountId, 'cln_unknown')).status, 404);
      assert.equal((await revoke(account.accountId, used.body.id)).status, 204);
      const refused = await api(t.url, 'GET', '/v2/subscriptions', { token: session });
      assert.equal(refused.status, 401);
      assert.match(String(refused.headers.get('www-authenticate')), /error="invalid_token".*the console link session was revoked/);
      assert.equal((await revoke(account.accountId, used.body.id)).status, 204, 'revoking again changes nothing');

      assert.equal((await revoke(account.accountId, unused.body.id)).status, 204);
      assert.equal((await exchange(t.url, codeOf(unused.body.url))).body.error, 'invalid_grant');
      const after = await api(t.url, 'GET', `/v2/admin/accounts/${account.accountId}/console-links`, { token: operatorToken });
      assert.ok(after.body.every((link: { revokedAt: string | null }) => link.revokedAt !== null));
      // The account's own client is not touched by revoking a console session.
      assert.equal((await api(t.url, 'GET', '/v2/subscriptions', { token: await t.token(account) })).status, 200);
    });

    it('of concurrent exchanges of one code exactly one gets a token', async () => {
      for (let round = 0; round < 3; round++) {
        const code = codeOf((await createLink(acme.accountId)).body.url);
        const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => exchange(t.url, code, {}, i % 2 === 0 ? '/v2/oauth/token' : '/v2/oauth/token/')));
        const statuses = answers.map((a) => a.status).sort();
        assert.deepEqual(statuses, [200, 400, 400, 400, 400, 400, 400, 400], JSON.stringify(answers.map((a) => a.body)));
        assert.ok(answers.filter((a) => a.status === 400).every((a) => a.body.error === 'invalid_grant'));
      }
    });

    it('the grant takes an optional narrower scope, never admin, and no client authentication', async () => {
      const narrow = await exchange(t.url, codeOf((await createLink(acme.accountId)).body.url), { scope: 'subscriptions:read' });
      assert.equal(narrow.status, 200);
      assert.equal(narrow.body.scope, 'subscriptions:read');
      assert.equal((await api(t.url, 'POST', '/v2/subscriptions', { token: narrow.body.access_token, body: {} })).status, 403);

      const code = codeOf((await createLink(acme.accountId)).body.url);
      const admin = await exchange(t.url, code, { scope: 'admin' });
      assert.equal(admin.status, 400);
      assert.equal(admin.body.error, 'invalid_scope');
      const withSecret = await exchange(t.url, code, { client_id: acme.clientId, client_secret: acme.clientSecret });
      assert.equal(withSecret.body.error, 'invalid_request');
      const withBasic = await tokenRequest(t.url, { grant_type: CONSOLE_LINK_GRANT_TYPE, code }, { authorization: `Basic ${Buffer.from(`${acme.clientId}:${acme.clientSecret}`).toString('base64')}` });
      assert.equal(withBasic.body.error, 'invalid_request');
      assert.equal((await tokenRequest(t.url, { grant_type: CONSOLE_LINK_GRANT_TYPE })).body.error, 'invalid_request');
      // None of those refusals spent the code.
      assert.equal((await exchange(t.url, code)).status, 200);
      // v1 knows only its JSON client credentials.
      const v1 = await fetch(`${t.url}/v1/oauth/token`, { method: 'POST', headers: TOKEN_FORM, body: new URLSearchParams({ grant_type: CONSOLE_LINK_GRANT_TYPE, code }) });
      assert.equal(v1.status, 400);
    });

    it('the code appears in no log line, whatever the path and level', async () => {
      const lines: string[] = [];
      const sink = new Writable({
        write(chunk, _encoding, done) {
          lines.push(String(chunk));
          done();
        },
      });
      const log = pino({ level: 'trace' }, sink);
      const app = await buildApp({ ...t.deps, log });
      const base = await app.listen({ port: 0, host: '127.0.0.1' });
      try {
        const created = await api(base, 'POST', `/v2/admin/accounts/${acme.accountId}/console-links`, { token: operatorToken, body: {} });
        const code = codeOf(created.body.url);
        assert.equal((await exchange(base, code)).status, 200);
        assert.equal((await exchange(base, code)).body.error, 'invalid_grant');
        assert.equal((await exchange(base, code, {}, '/v2/oauth/token/')).body.error, 'invalid_grant');
        assert.equal((await exchange(base, code, {}, '/v2/oauth/token?x=1')).body.error, 'invalid_grant');
        assert.ok(
          lines.some((line) => line.includes('/v2/oauth/token')),
          'the exchanges were logged',
        );
        const secretPart = code.slice('rrs_cl_'.length);
        for (const line of lines) assert.ok(!line.includes(secretPart), `log line holds the code: ${line}`);
      } finally {
        await app.close();
      }
    });
  });

  describe(`console-link exchanges and the token endpoint's failure limit [${dialect}]`, () => {
    let t: TestApp;
    before(async () => {
      t = await startTestApp(dialect);
    });
    after(() => t.close());

    it('unknown codes count like failed client authentications: after 10 from an address, even a valid code from it gets 429; a spent code does not count', async () => {
      const operatorToken = await t.token(t.operator, 'admin');
      const account = await t.createClientAccount();
      const newCode = async () => codeOf((await api(t.url, 'POST', `/v2/admin/accounts/${account.accountId}/console-links`, { token: operatorToken, body: {} })).body.url);
      // A page reloaded a dozen times presents its spent code again: refused, but no lock-out.
      const spent = await newCode();
      assert.equal((await exchange(t.url, spent)).status, 200);
      for (let i = 0; i < 12; i++) assert.equal((await exchange(t.url, spent)).body.error, 'invalid_grant');
      const valid = await newCode();
      for (let i = 0; i < 10; i++) assert.equal((await exchange(t.url, `rrs_cl_guess${i}`)).body.error, 'invalid_grant');
      const limited = await exchange(t.url, valid);
      assert.equal(limited.status, 429);
      assert.equal(limited.body.error, 'temporarily_unavailable');
      const retryAfter = Number(limited.headers.get('retry-after'));
      assert.ok(retryAfter > 0 && retryAfter <= 60, `Retry-After ${retryAfter}`);
      // The code guesses lock out code exchanges from the address, not a client's own credentials
      // from it (they count towards the address's limit, 100), and the valid code was not spent.
      const clientAttempt = await tokenRequest(t.url, { grant_type: 'client_credentials', client_id: account.clientId, client_secret: account.clientSecret, scope: 'requests:read' });
      assert.equal(clientAttempt.status, 200);
      const row = await t.deps.db.selectFrom('console_links').select('used_at').where('code_hash', '=', hashConsoleLinkCode(valid)).executeTakeFirstOrThrow();
      assert.equal(row.used_at, null);
    });
  });
}
