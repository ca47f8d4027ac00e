// needs: database, every-node-line
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { openStorage } from '../../src/storage/database.js';
import { startAuthorizationServer, type AuthorizationServer } from '../support/authorization-server.js';
import { childEnvironment, runCli, startChildService, type ChildService } from '../support/child-service.js';
import { testDialects } from '../support/databases.js';
import { eventually } from '../support/notifications.js';
import { startHttpReceiver, type Receiver } from '../support/receivers.js';
import { api } from '../support/test-app.js';

/**
 * Secrets never reach the logs, and never sit in clear in the database: the real service at
 * LOG_LEVEL=trace, taken through every path that carries one — client secrets (CLI, rotation,
 * token requests in the body and in Basic), access tokens (issued, presented), callback
 * credentials (Basic, Bearer, OAuth2 client secret) and the tokens the OAuth2 callback fetches,
 * signing secrets (shown, rotated, used) — then every log line and, in the database, every row of
 * every table (and on SQLite the database files themselves) searched for each of them.
 */
for (const dialect of testDialects()) {
  describe(`secrets in logs and at rest, LOG_LEVEL=trace [${dialect}]`, () => {
    let child: Awaited<ReturnType<typeof childEnvironment>>;
    let service: ChildService;
    let receiver: Receiver;
    let as: AuthorizationServer;
    const secrets = new Map<string, string>();
    const keep = (what: string, value: string) => secrets.set(what, value);
    let cliOutput = '';

    before(async () => {
      child = await childEnvironment(dialect);
      receiver = await startHttpReceiver();
      as = await startAuthorizationServer({ audience: 'https://receiver.example' });
      service = await startChildService({ ...child.env, LOG_LEVEL: 'trace', CALLBACK_ALLOW_PRIVATE_NETWORKS: 'true', PUBLIC_URL: 'http://127.0.0.1:8080' });
    });
    after(async () => {
      service.process.kill('SIGTERM');
      await service.exited;
      await receiver.close();
      await as.close();
      await child.cleanup();
    });

    it('no client secret, access token, callback credential or signing secret appears in a log line or in clear in the database', async () => {
      const cli = (args: string[]) => {
        const result = runCli(args, { ...child.env, LOG_LEVEL: 'trace' });
        assert.equal(result.status, 0, result.stderr);
        cliOutput += result.stderr;
        return JSON.parse(result.stdout);
      };
      const operator = JSON.parse(readFileSync(join(child.dataDir, 'operator-credentials.json'), 'utf8'));
      keep('operator client secret', operator.client_secret);
      const account = cli(['accounts', 'create', '--name', 'secretive']);
      const client = cli(['clients', 'create', '--account', account.id]);
      keep('client secret', client.client_secret);
      const rotated = cli(['clients', 'rotate-secret', client.client_id]);
      keep('rotated client secret', rotated.client_secret);
      const file = join(child.dataDir, 'experience.json');
      writeFileSync(file, JSON.stringify({ name: 'summer', title: 'Summer', prizes: [{ id: 'cpn', bucket: 'coupons', title: '10 off', value: 10, kind: 'coupon' }] }));
      cli(['experiences', 'import', file, '--account', account.id]);

      // Token requests: secret in the body (v2 form, v1 JSON) and in Basic; a failed one too.
      const form = (secret: string) => new URLSearchParams({ grant_type: 'client_credentials', client_id: client.client_id, client_secret: secret, scope: client.scopes });
      const v2 = await fetch(`${service.url}/v2/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: form(rotated.client_secret) });
      const token = ((await v2.json()) as { access_token: string }).access_token;
      keep('access token', token);
      const basic = Buffer.from(`${encodeURIComponent(client.client_id)}:${encodeURIComponent(client.client_secret)}`).toString('base64');
      const viaBasic = await fetch(`${service.url}/v2/oauth/token?via=basic`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${basic}` },
        body: new URLSearchParams({ grant_type: 'client_credentials', scope: 'requests:read' }),
      });
      keep('access token (Basic)', ((await viaBasic.json()) as { access_token: string }).access_token);
      const v1 = await fetch(`${service.url}/v1/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ client_id: client.client_id, client_secret: client.client_secret }),
      });
      keep('access token (v1)', ((await v1.json()) as { access_token: string }).access_token);
      const wrongSecret = 'rrs_cs_wrong-secret-that-must-not-be-logged-either-0123456789';
      keep('a wrong client secret', wrongSecret);
      assert.equal((await fetch(`${service.url}/v2/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: form(wrongSecret) })).status, 401);

      // Callback credentials of every kind, and the signing secrets shown and rotated.
      const basicCredential = Buffer.from('hook-user:hook-password-0123456789').toString('base64');
      keep('callback Basic credential', basicCredential);
      keep('callback Basic password', 'hook-password-0123456789');
      const bearerCredential = 'callback-bearer-token-0123456789abcdef';
      keep('callback Bearer token', bearerCredential);
      keep('callback OAuth2 client secret', as.clientSecret);
      const subscriptions = [
        { event: 'registered-request', callback: { url: `${receiver.url}/basic`, authorization: { Basic: basicCredential } } },
        { event: 'registered-request', callback: { url: `${receiver.url}/bearer`, authorization: { Bearer: bearerCredential } } },
        {
          event: 'processed-request',
          callback: { url: `${receiver.url}/oauth2`, authorization: { oauth2: { url: as.tokenUrl, client_id: as.clientId, client_secret: as.clientSecret, audience: as.audience } } },
        },
      ];
      for (const body of subscriptions) {
        const created = await api(service.url, 'POST', '/v2/subscriptions', { token, body });
        assert.equal(created.status, 201, JSON.stringify(created.body));
        keep(`signing secret of ${body.callback.url}`, created.body.secret);
        const shown = await api(service.url, 'GET', `/v2/subscriptions/${created.body._id}/secret`, { token });
        const rotatedSecret = await api(service.url, 'POST', `/v2/subscriptions/${created.body._id}/secret/rotate`, { token });
        keep(`rotated signing secret of ${body.callback.url}`, rotatedSecret.body.secret);
        assert.equal(shown.status, 200);
      }
      keep('account signing secret', (await api(service.url, 'GET', '/v2/signing-secret', { token })).body.secret);

      // Deliveries with each credential (the OAuth2 one fetches a token from the authorization server).
      const created = await api(service.url, 'POST', '/v2/requests', { token, body: { experience: 'summer', registeredCallbackUrl: `${receiver.url}/per-request` } });
      assert.equal(created.status, 202);
      await eventually(() => receiver.requests.some((r) => r.path === '/oauth2'), 20_000, 'the OAuth2 delivery');
      for (const request of receiver.requests) {
        const presented = String(request.headers.authorization ?? '').replace(/^(Bearer|Basic) /, '');
        if (presented && request.path === '/oauth2') keep('token fetched for the OAuth2 callback', presented);
      }
      assert.ok(secrets.has('token fetched for the OAuth2 callback'));

      // The logs: every line the service and the CLI wrote, at trace level.
      const logs = `${service.output()}\n${cliOutput}`;
      assert.ok(logs.split('\n').filter((line) => /"level":(10|20),/.test(line)).length > 0, 'trace and debug lines were written');
      for (const [what, value] of secrets) assert.ok(!logs.includes(value), `the ${what} appears in the logs`);

      // The database: every row of every table, as text; on SQLite also the raw files.
      const storage = openStorage(child.env.DATABASE_URL!);
      let dump = '';
      try {
        const tables =
          dialect === 'sqlite'
            ? (await sql<{ name: string }>`select name from sqlite_master where type = 'table'`.execute(storage.db)).rows
            : (await sql<{ name: string }>`select table_name as name from information_schema.tables where table_schema = current_schema()`.execute(storage.db)).rows;
        for (const { name } of tables) dump += JSON.stringify((await sql`select * from ${sql.table(name)}`.execute(storage.db)).rows);
      } finally {
        await storage.close();
      }
      assert.ok(dump.includes(client.client_id), 'the dump holds the rows');
      if (dialect === 'sqlite') {
        for (const name of readdirSync(child.dataDir).filter((n) => n.startsWith('rewards.db'))) dump += readFileSync(join(child.dataDir, name)).toString('latin1');
      }
      for (const [what, value] of secrets) assert.ok(!dump.includes(value), `the ${what} is stored in clear`);
    });
  });
}
