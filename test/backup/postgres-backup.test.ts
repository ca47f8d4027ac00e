// needs: postgres
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { eventually } from '../support/notifications.js';
import { clusterDirectory, clusterUnavailable, configure, initCluster, ownByPostgres, removeClusters, runAsPostgres, startCluster, writeDataFile, type Cluster } from '../support/postgres-cluster.js';
import { ackedBefore, backupUnderLoad, SCENARIO_ENV, serveRestored, startSource, stopSource, type Source } from './restore-scenario.js';

/**
 * PostgreSQL's backups as docs/deployment.md, "Backups and restore" describes them, on a cluster
 * of the test's own (test/support/postgres-cluster.ts: initdb on a free loopback port, WAL
 * archived into a directory):
 * - `pg_basebackup` taken while the real service takes a stream of requests and a receiver fails;
 *   the base backup started as a cluster on another port and the service run on it
 *   (restore-scenario.ts: every request answered before the backup is there, what was pending is
 *   delivered with its `webhook-id`);
 * - the same base backup with the archived WAL replayed to a recovery_target_time after it:
 *   every request answered before that time is there, none sent after it.
 */
describe('pg_basebackup and WAL archiving, restored and served [postgres]', { skip: clusterUnavailable() }, () => {
  const directories: string[] = [];
  const dataDirectories: string[] = [];
  let source: Source | undefined;
  after(async () => {
    if (source && source.service.process.exitCode === null) source.service.process.kill('SIGKILL');
    await source?.receiver.close();
    await removeClusters(directories, dataDirectories);
  });

  /** A copy of the base backup to start (starting a cluster changes its directory). */
  const copyOf = async (base: string, name: string) => {
    const copy = join(base, '..', name);
    await runAsPostgres('/bin/cp', ['-a', base, copy]);
    dataDirectories.push(copy);
    // The restored cluster archives nothing here (in production it archives, to the same place, on its new timeline).
    configure(copy, { archive_mode: 'off' });
    return copy;
  };

  it('a base backup taken under a stream of requests restores every request answered before it; the service resumes the pending deliveries; WAL replays to a point in time', async (t) => {
    const dir = clusterDirectory('rewards-pg-backup-');
    directories.push(dir);
    const archive = join(dir, 'archive');
    mkdirSync(archive);
    ownByPostgres(archive);
    const data = await initCluster(dir, { wal_level: 'replica', archive_mode: 'on', archive_command: `test ! -f ${archive}/%f && cp %p ${archive}/%f` });
    dataDirectories.push(data);
    const primary = await startCluster(data);
    await primary.query('create database rewards');

    const serviceData = mkdtempSync(join(tmpdir(), 'rewards-child-'));
    directories.push(serviceData);
    const env = { PATH: process.env.PATH ?? '', DATA_DIR: serviceData, DATABASE_URL: primary.url('rewards'), SECRET_KEY: randomBytes(32).toString('base64'), ...SCENARIO_ENV };
    source = await startSource(env, serviceData);

    const base = join(dir, 'base');
    const backup = await backupUnderLoad(source, () => runAsPostgres('pg_basebackup', ['-d', primary.url('postgres'), '-D', base, '-X', 'stream', '-c', 'fast']));
    t.diagnostic(`pg_basebackup in ${backup.backupMs} ms; ${backup.ackedDuring} requests answered meanwhile, the slowest in ${backup.slowestDuringMs} ms`);
    const backupEnded = Date.now();
    // The point in time to recover to, with requests answered on both sides of it.
    await eventually(() => source!.sent.filter((request) => request.sentAt > backupEnded && request.ackedAt !== undefined).length >= 10, 20_000, 'requests answered after the backup');
    const target = Date.now();
    const beforeTarget = ackedBefore(source, target);
    await eventually(() => ackedBefore(source!, Date.now()).length >= beforeTarget.length + 10, 20_000, 'requests answered after the target time');
    await stopSource(source);
    const sentAfterTarget = source.sent.filter((request) => request.sentAt > target && request.id !== undefined).map((request) => request.id!);
    // The segment being written is archived once full: switch to a new one, and wait for the archive to have it.
    const [switched] = await primary.query<{ wal: string }>('select pg_walfile_name(pg_switch_wal()) as wal');
    await eventually(() => existsSync(join(archive, switched!.wal)), 30_000, `${switched!.wal} archived`);
    await primary.stop();

    // 1. The base backup alone (pg_basebackup -X stream holds the WAL it needs), as a cluster on another port, with the service on it.
    const restored: Cluster = await startCluster(await copyOf(base, 'restored'));
    const { pending } = await serveRestored(source, { ...env, DATABASE_URL: restored.url('rewards') }, backup.ackedBeforeBackup);
    await restored.stop();
    t.diagnostic(`${backup.ackedBeforeBackup.length} requests answered before the backup, all restored; ${pending} notifications pending in it, all delivered after the restore`);

    // 2. Point-in-time recovery: the base backup, then the archived WAL up to the target time.
    const pitr = await copyOf(base, 'pitr');
    configure(pitr, { restore_command: `cp ${archive}/%f %p`, recovery_target_time: new Date(target).toISOString().replace('T', ' ').replace('Z', '+00'), recovery_target_action: 'promote' });
    writeDataFile(pitr, 'recovery.signal', '');
    const recovered = await startCluster(pitr);
    await eventually(
      async () => (await recovered.query<{ recovering: boolean }>('select pg_is_in_recovery() as recovering').catch(() => []))[0]?.recovering === false,
      60_000,
      'recovery to the target time',
    );
    const present = new Set((await recovered.query<{ id: string }>('select id from requests', 'rewards')).map((row) => row.id));
    await recovered.stop();
    assert.deepEqual(
      beforeTarget.filter((id) => !present.has(id)),
      [],
      'every request answered before the target time is there',
    );
    assert.ok(
      beforeTarget.some((id) => !backup.ackedBeforeBackup.includes(id) && source!.sent.find((request) => request.id === id)!.sentAt > backupEnded),
      'some of them came after the base backup: from the archived WAL',
    );
    assert.ok(sentAfterTarget.length > 0);
    assert.deepEqual(
      sentAfterTarget.filter((id) => present.has(id)),
      [],
      'no request sent after the target time is there',
    );
    t.diagnostic(`recovered to ${new Date(target).toISOString()}: the ${beforeTarget.length} requests answered before it are there, none of the ${sentAfterTarget.length} sent after it`);
  });
});
