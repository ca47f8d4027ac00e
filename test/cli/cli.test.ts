// needs: database
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCli } from '../../src/cli/program.js';
import { secretMatches } from '../../src/domain/tokens/client-secret.js';
import { openStorage, type Storage } from '../../src/storage/database.js';
import { findExperienceByName, takePrizeStock } from '../../src/storage/repositories/experiences.js';
import { findOAuthClient } from '../../src/storage/repositories/oauth-clients.js';
import { createPostgresSchema, postgresUrl, postgresUrlWithSchema, testDialects } from '../support/databases.js';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createDeps } from '../../src/deps.js';
import { CONSOLE_LINK_GRANT_TYPE, hashConsoleLinkCode } from '../../src/domain/tokens/console-link-code.js';

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'rewards.js');

interface Run {
  code: number;
  stdout: string;
  stderr: string;
  json: any;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Runs the real `rewards` binary as a child process, as an operator would. */
async function spawnRewards(args: string[], env: Record<string, string>): Promise<Run> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [BIN, ...args], { env: { ...process.env, ...env } });
    return { code: 0, stdout, stderr, json: parseJson(stdout) };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: Number(failed.code ?? 1), stdout: failed.stdout, stderr: failed.stderr, json: parseJson(failed.stdout) };
  }
}

// The commands run in-process below (program.ts, as the binary runs them); this one runs the binary
// itself: its loader, its V8 flags, its output streams and its exit codes.
describe('the rewards executable [sqlite]', () => {
  it('migrates, creates an account, and exits 2 with one line on stderr for a duplicate', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rewards-bin-'));
    try {
      const env = { DATABASE_URL: `sqlite:${join(dir, 'rewards.db')}`, DATA_DIR: dir, SECRET_KEY: randomBytes(32).toString('base64'), LOG_LEVEL: 'silent' };
      assert.equal((await spawnRewards(['migrate'], env)).code, 0);
      const created = await spawnRewards(['accounts', 'create', '--name', 'acme'], env);
      assert.equal(created.code, 0, created.stderr);
      assert.equal(created.json.name, 'acme');
      const again = await spawnRewards(['accounts', 'create', '--name', 'acme'], env);
      assert.equal(again.code, 2);
      assert.match(again.stderr, /^rewards: .*already exists\n$/);
      assert.equal(again.stdout, '');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

for (const dialect of testDialects()) {
  describe(`rewards CLI [${dialect}]`, () => {
    let dir: string;
    let env: Record<string, string>;
    let storage: Storage;
    let dropSchema: (() => Promise<void>) | undefined;

    /** Runs `rewards …` in this process: the same commands, settings and exit codes as the binary. */
    const rewards = async (...args: string[]): Promise<Run> => {
      let stdout = '';
      let stderr = '';
      const code = await runCli(args, { env: { ...process.env, ...env }, out: (text) => (stdout += text), err: (text) => (stderr += text) });
      return { code, stdout, stderr, json: parseJson(stdout) };
    };

    const writeJson = (name: string, value: unknown) => {
      const file = join(dir, name);
      writeFileSync(file, typeof value === 'string' ? value : JSON.stringify(value));
      return file;
    };

    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'rewards-cli-'));
      let databaseUrl = `sqlite:${join(dir, 'rewards.db')}`;
      let schema: string | undefined;
      if (dialect === 'postgres') {
        const created = await createPostgresSchema();
        schema = created.schema;
        dropSchema = created.drop;
        databaseUrl = postgresUrlWithSchema(schema);
      }
      env = { DATABASE_URL: databaseUrl, DATA_DIR: dir, SECRET_KEY: randomBytes(32).toString('base64'), LOG_LEVEL: 'silent' };
      const migrated = await rewards('migrate');
      assert.equal(migrated.code, 0, migrated.stderr);
      storage = openStorage(dialect === 'postgres' ? postgresUrl() : databaseUrl, { schema });
    });
    after(async () => {
      await storage?.close();
      await dropSchema?.();
      rmSync(dir, { recursive: true, force: true });
    });

    it('--help lists every command group, and each command has its own help', async () => {
      const help = await rewards('--help');
      assert.equal(help.code, 0);
      for (const command of ['serve', 'migrate', 'accounts', 'clients', 'experiences', 'keys', 'secrets', 'console']) assert.match(help.stdout, new RegExp(`\\b${command}\\b`));
      const importHelp = await rewards('experiences', 'import', '--help');
      assert.equal(importHelp.code, 0);
      assert.match(importHelp.stdout, /--account <idOrName>/);
      assert.match(importHelp.stdout, /<file>/);
    });

    it('accounts create prints {id, name}; a duplicate name fails with exit code 2', async () => {
      const created = await rewards('accounts', 'create', '--name', 'acme');
      assert.equal(created.code, 0, created.stderr);
      assert.deepEqual(Object.keys(created.json).sort(), ['id', 'name']);
      assert.match(created.json.id, /^acc_/);
      assert.equal(created.json.name, 'acme');
      const again = await rewards('accounts', 'create', '--name', 'acme');
      assert.equal(again.code, 2);
      assert.match(again.stderr, /already exists/);
      assert.equal(again.stdout, '');
    });

    it('clients create prints the secret once; only its hash is stored', async () => {
      const created = await rewards('clients', 'create', '--account', 'acme', '--scopes', 'events:read requests:write');
      assert.equal(created.code, 0, created.stderr);
      assert.deepEqual(Object.keys(created.json).sort(), ['accountId', 'client_id', 'client_secret', 'scopes']);
      assert.equal(created.json.scopes, 'events:read requests:write');
      const stored = await findOAuthClient(storage.db, created.json.client_id);
      assert.equal(stored?.accountId, created.json.accountId);
      assert.ok(secretMatches(created.json.client_secret, stored!.secretHash));
      assert.notEqual(stored!.secretHash, created.json.client_secret);

      const defaults = await rewards('clients', 'create', '--account', created.json.accountId);
      assert.equal(defaults.code, 0, defaults.stderr);
      assert.ok(!defaults.json.scopes.split(' ').includes('admin'));
      const admin = await rewards('clients', 'create', '--account', 'acme', '--scopes', 'admin');
      assert.equal(admin.code, 2);
      assert.match(admin.stderr, /operator account/);
      const unknown = await rewards('clients', 'create', '--account', 'nobody');
      assert.equal(unknown.code, 2);
      assert.match(unknown.stderr, /not found/);
    });

    it('clients rotate-secret prints the new secret and how long the previous one stays valid', async () => {
      const created = await rewards('clients', 'create', '--account', 'acme');
      const rotated = await rewards('clients', 'rotate-secret', created.json.client_id);
      assert.equal(rotated.code, 0, rotated.stderr);
      assert.equal(rotated.json.client_id, created.json.client_id);
      assert.notEqual(rotated.json.client_secret, created.json.client_secret);
      const graceMs = Date.parse(rotated.json.previous_secret_valid_until) - Date.now();
      assert.ok(graceMs > 23 * 3_600_000 && graceMs <= 24 * 3_600_000, String(graceMs));
      const stored = await findOAuthClient(storage.db, created.json.client_id);
      assert.ok(secretMatches(rotated.json.client_secret, stored!.secretHash));
      assert.ok(secretMatches(created.json.client_secret, stored!.previousSecretHash));
      assert.equal((await rewards('clients', 'rotate-secret', 'cli_unknown')).code, 2);
    });

    it('console link prints a one-time URL whose code the token endpoint exchanges once for a token of the account', async () => {
      const account = await rewards('accounts', 'create', '--name', 'console-cli');
      assert.equal(account.code, 0, account.stderr);
      const linked = await rewards('console', 'link', '--account', 'console-cli', '--ttl', '2h');
      assert.equal(linked.code, 0, linked.stderr);
      assert.deepEqual(Object.keys(linked.json).sort(), ['expiresAt', 'id', 'tokenTtlSeconds', 'url']);
      assert.equal(linked.json.tokenTtlSeconds, 7200);
      const expiresIn = Date.parse(linked.json.expiresAt) - Date.now();
      assert.ok(expiresIn > 9 * 60_000 && expiresIn <= 10 * 60_000, linked.json.expiresAt);
      const match = /^http:\/\/127\.0\.0\.1:8080\/console\/#link=(rrs_cl_[A-Za-z0-9_-]{43})$/.exec(linked.json.url);
      assert.ok(match, linked.json.url);
      assert.match(linked.stderr, /PUBLIC_URL is not set here, so the link assumes the service answers at http:\/\/127\.0\.0\.1:8080; if it answers elsewhere, give --base-url/);
      const code = match[1]!;
      // Only the code's hash is stored.
      const rows = await storage.db.selectFrom('console_links').selectAll().where('account_id', '=', account.json.id).execute();
      assert.equal(rows.length, 1);
      assert.equal(rows[0]!.code_hash, hashConsoleLinkCode(code));
      assert.ok(!JSON.stringify(rows).includes(code.slice('rrs_cl_'.length)));

      // The service on the same database takes the code once.
      const deps = await createDeps(loadConfig({ ...env, PUBLIC_URL: 'http://127.0.0.1:8080' }), { prepare: false });
      const app = await buildApp(deps);
      try {
        const exchange = () =>
          app.inject({
            method: 'POST',
            url: '/v2/oauth/token/',
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
            payload: new URLSearchParams({ grant_type: CONSOLE_LINK_GRANT_TYPE, code }).toString(),
          });
        const first = await exchange();
        assert.equal(first.statusCode, 200, first.body);
        assert.equal(first.json().expires_in, 7200);
        const me = await app.inject({ url: '/v2/me', headers: { authorization: `Bearer ${first.json().access_token}` } });
        assert.equal(me.statusCode, 200, me.body);
        assert.equal(me.json().accountId, account.json.id);
        assert.equal((await exchange()).json().error, 'invalid_grant');
      } finally {
        await app.close();
        await deps.close();
      }

      const tooLong = await rewards('console', 'link', '--account', 'console-cli', '--ttl', '25h');
      assert.equal(tooLong.code, 2);
      assert.match(tooLong.stderr, /--ttl must be between 1m and 24h/);
      assert.equal((await rewards('console', 'link', '--account', 'nobody-here')).code, 2);

      // Told where the service answers, the link is built on that address and no guess is announced.
      const told = await rewards('console', 'link', '--account', 'console-cli', '--base-url', 'https://rewards.example.com/');
      assert.equal(told.code, 0, told.stderr);
      assert.match(told.json.url, /^https:\/\/rewards\.example\.com\/console\/#link=rrs_cl_/);
      assert.equal(told.stderr, '');
      const badBase = await rewards('console', 'link', '--account', 'console-cli', '--base-url', 'ftp://rewards.example.com');
      assert.equal(badBase.code, 2);
      assert.match(badBase.stderr, /--base-url must be an http\(s\) URL/);
    });

    it('keys rotate prints the new kid, which becomes the signing key', async () => {
      const rotated = await rewards('keys', 'rotate');
      assert.equal(rotated.code, 0, rotated.stderr);
      assert.equal(typeof rotated.json.kid, 'string');
      assert.ok(Date.parse(rotated.json.previous_keys_valid_until) > Date.now());
      const signers = await storage.db.selectFrom('signing_keys').select('kid').where('retired_at', 'is', null).execute();
      assert.deepEqual(
        signers.map((k) => k.kid),
        [rotated.json.kid],
      );
    });

    it("experiences import creates, then replaces by name with the file's definition, keeping the remaining stock of kept prizes", async () => {
      const file = writeJson('campaigns.json', [
        { name: 'summer', title: 'Summer', events: ['buy'], prizes: [{ id: 'c10', bucket: 'coupons', title: '10%', value: 10, kind: 'coupon', stock: 5 }] },
        { name: 'winter', title: 'Winter' },
      ]);
      const first = await rewards('experiences', 'import', file, '--account', 'acme');
      assert.equal(first.code, 0, first.stderr);
      assert.deepEqual(
        first.json.imported.map((e: any) => e.name),
        ['summer', 'winter'],
      );
      const account = (await storage.db.selectFrom('accounts').select('id').where('name', '=', 'acme').executeTakeFirstOrThrow()).id;
      const summer = await findExperienceByName(storage.db, account, 'summer');
      assert.equal(summer?.id, first.json.imported[0].id);
      assert.deepEqual(
        summer?.prizes.map((p) => [p.id, p.stock, p.quantity, p.description]),
        [['c10', 5, 1, '']],
      );
      assert.equal(await takePrizeStock(storage.db, summer.id, 'c10'), true);

      // A single object is accepted too; same name → same experience, replaced in place by the file's
      // definition (omitted members take their defaults), keeping the stock already consumed.
      const again = writeJson('summer.json', { name: 'summer', title: 'Summer 2', prizes: [{ id: 'c10', bucket: 'coupons', title: '10%', value: 12, kind: 'coupon' }] });
      const second = await rewards('experiences', 'import', again, '--account', account);
      assert.equal(second.code, 0, second.stderr);
      assert.deepEqual(second.json, { imported: [{ id: summer.id, name: 'summer' }] });
      const replaced = await findExperienceByName(storage.db, account, 'summer');
      assert.deepEqual([replaced?.title, replaced?.events, replaced?.prizes[0]?.value, replaced?.prizes[0]?.stock], ['Summer 2', [], 12, 4]);
    });

    it('experiences import refuses a bad file as a whole, naming the field, and changes nothing', async () => {
      const file = writeJson('bad.json', [
        { name: 'spring', title: 'Spring' },
        { name: 'autumn', title: 'Autumn', prizes: [{ id: 'p', bucket: 'b', title: 't', value: -3, kind: 'coupon' }] },
      ]);
      const bad = await rewards('experiences', 'import', file, '--account', 'acme');
      assert.equal(bad.code, 2);
      assert.equal(bad.stdout, '');
      assert.match(bad.stderr, /1\.prizes\.0\.value: must be >= 0/);
      const duplicate = writeJson('dup.json', [
        { name: 'x', title: 'X' },
        { name: 'x', title: 'X' },
      ]);
      assert.match((await rewards('experiences', 'import', duplicate, '--account', 'acme')).stderr, /1\.name: .*more than once/);
      assert.match((await rewards('experiences', 'import', writeJson('junk.json', '{oops'), '--account', 'acme')).stderr, /not valid JSON/);
      assert.match((await rewards('experiences', 'import', join(dir, 'missing.json'), '--account', 'acme')).stderr, /cannot read/);
      const unknownAccount = await rewards('experiences', 'import', writeJson('ok.json', { name: 'fine', title: 'Fine' }), '--account', 'nobody');
      assert.equal(unknownAccount.code, 2);
      const names = (await storage.db.selectFrom('experiences').select('name').execute()).map((r) => r.name).sort();
      assert.deepEqual(names, ['summer', 'winter']);
    });
  });
}
