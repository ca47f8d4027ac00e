// needs: sqlite
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { childEnvironment, runCliInProcess } from '../support/child-service.js';
import { backupUnderLoad, rewards, SCENARIO_ENV, serveRestored, startSource, stopSource, type Source } from './restore-scenario.js';

/**
 * `rewards backup FILE` on the embedded SQLite database (docs/deployment.md, "Backups and
 * restore"): taken from the real service under a stream of requests, restored as the docs say,
 * and served (restore-scenario.ts); then what it refuses.
 */
describe('rewards backup, and a restore of it [sqlite]', () => {
  const directories: string[] = [];
  let source: Source | undefined;
  after(async () => {
    if (source && source.service.process.exitCode === null) source.service.process.kill('SIGKILL');
    await source?.receiver.close();
    for (const directory of directories) rmSync(directory, { recursive: true, force: true });
  });

  it('a backup taken while the service takes requests restores every request answered before it, and the pending deliveries resume', async (t) => {
    const setup = await childEnvironment('sqlite');
    const backups = mkdtempSync(join(tmpdir(), 'rewards-backups-'));
    directories.push(setup.dataDir, backups);
    const env = { ...setup.env, ...SCENARIO_ENV };
    source = await startSource(env, setup.dataDir);
    const file = join(backups, 'rewards-backup.db');

    const backup = await backupUnderLoad(source, () => rewards(['backup', file], env));
    assert.equal(backup.taken.status, 0, backup.taken.stderr);
    const report = JSON.parse(backup.taken.stdout) as { file: string; bytes: number; pages: number; durationMs: number; integrity: string };
    assert.equal(report.file, file);
    assert.equal(report.bytes, statSync(file).size);
    assert.ok(report.pages > 0 && Number.isInteger(report.durationMs), backup.taken.stdout);
    assert.equal(report.integrity, 'ok');
    assert.equal(statSync(file).mode & 0o777, 0o600, 'the backup is readable by its owner only, like the database');
    assert.deepEqual(readdirSync(backups), ['rewards-backup.db'], 'nothing left beside it');
    t.diagnostic(
      `backup ${report.bytes} bytes, ${report.durationMs} ms (the command: ${backup.backupMs} ms with its start); ${backup.ackedDuring} requests answered meanwhile, the slowest in ${backup.slowestDuringMs} ms`,
    );

    // The restore (docs/deployment.md): service stopped, the file in place of DATA_DIR/rewards.db, no -wal or -shm left.
    await stopSource(source);
    const database = join(setup.dataDir, 'rewards.db');
    copyFileSync(file, database);
    rmSync(`${database}-wal`, { force: true });
    rmSync(`${database}-shm`, { force: true });
    const { pending } = await serveRestored(source, env, backup.ackedBeforeBackup);
    t.diagnostic(`${backup.ackedBeforeBackup.length} requests answered before the backup, all restored; ${pending} notifications pending in it, all delivered after the restore`);

    // An existing file is kept unless --force; with it, the new backup replaces it.
    const before = statSync(file);
    const again = await runCliInProcess(['backup', file], env);
    assert.equal(again.status, 2, again.stderr);
    assert.match(again.stderr, /already exists: give --force/);
    assert.equal(statSync(file).mtimeMs, before.mtimeMs);
    const forced = await runCliInProcess(['backup', file, '--force'], env);
    assert.equal(forced.status, 0, forced.stderr);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.deepEqual(readdirSync(backups), ['rewards-backup.db']);
  });

  it('refuses the database itself, a missing directory, a missing database, and PostgreSQL (pointing to the docs)', async () => {
    const setup = await childEnvironment('sqlite');
    directories.push(setup.dataDir);
    assert.equal((await runCliInProcess(['migrate'], setup.env)).status, 0);
    const database = join(setup.dataDir, 'rewards.db');

    const itself = await runCliInProcess(['backup', database, '--force'], setup.env);
    assert.equal(itself.status, 2);
    assert.match(itself.stderr, /is the service's database/);
    const wal = await runCliInProcess(['backup', `${database}-wal`, '--force'], setup.env);
    assert.equal(wal.status, 2);
    const nowhere = await runCliInProcess(['backup', join(setup.dataDir, 'missing', 'b.db')], setup.env);
    assert.equal(nowhere.status, 2);
    assert.match(nowhere.stderr, /does not exist/);

    const empty = mkdtempSync(join(tmpdir(), 'rewards-nodb-'));
    directories.push(empty);
    const none = await runCliInProcess(['backup', join(empty, 'b.db')], { ...setup.env, DATA_DIR: empty, DATABASE_URL: '' });
    assert.equal(none.status, 2);
    assert.match(none.stderr, /There is no database at/);
    assert.deepEqual(readdirSync(empty), [], 'no database was made, no backup written');

    // No SECRET_KEY and a port nothing listens on: the refusal needs neither.
    const postgres = await runCliInProcess(['backup', join(empty, 'b.db')], { PATH: process.env.PATH ?? '', DATABASE_URL: 'postgres://rewards@127.0.0.1:1/rewards' });
    assert.equal(postgres.status, 2);
    assert.match(postgres.stderr, /PostgreSQL database: back it up with pg_basebackup and WAL archiving \(docs\/deployment\.md, "Backups and restore"/);
    assert.equal(postgres.stdout, '');
  });
});
