// needs: sqlite, every-node-line
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { pino } from 'pino';
import { loadConfig } from '../../src/config.js';
import { createDeps } from '../../src/deps.js';
import { ensureOperator } from '../../src/services/operator-bootstrap.js';

/**
 * The service's files on disk (SQLite's database, its -wal and -shm, secret.key, the operator's
 * credentials) are readable by the service's user only, and its data directory is 0700: also when
 * they exist already with wider modes, which the log then names.
 */

const mode = (path: string) => `0${(statSync(path).mode & 0o7777).toString(8)}`;

function capturingLog() {
  const lines: Array<{ level: number; msg: string; path?: string; mode?: string }> = [];
  const log = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  return { log, lines };
}

/** Starts the service's dependencies on SQLite in `dataDir` (no SECRET_KEY: generated there), makes the operator, writes a row, stops. */
async function runOnce(dataDir: string, log: ReturnType<typeof capturingLog>['log'], databaseFile = join(dataDir, 'rewards.db')) {
  const deps = await createDeps(loadConfig({ DATA_DIR: dataDir, DATABASE_URL: `sqlite:${databaseFile}`, LOG_LEVEL: 'silent' }), { log });
  try {
    await ensureOperator(deps.db, dataDir, 'http://127.0.0.1:8080/v2/oauth/token', { log });
    const files = { db: databaseFile, wal: `${databaseFile}-wal`, shm: `${databaseFile}-shm` };
    // The WAL files exist while the database is open.
    return Object.fromEntries(Object.entries(files).map(([name, path]) => [name, existsSync(path) ? mode(path) : 'missing']));
  } finally {
    await deps.close();
  }
}

describe('file modes of the data directory [sqlite]', () => {
  const roots: string[] = [];
  const root = () => {
    const dir = mkdtempSync(join(tmpdir(), 'rewards-modes-'));
    chmodSync(dir, 0o755);
    roots.push(dir);
    return dir;
  };
  after(() => {
    for (const dir of roots) rmSync(dir, { recursive: true, force: true });
  });

  it('a fresh data directory is 0700 and every file in it 0600, whatever the umask allows', async () => {
    const dataDir = join(root(), 'data');
    const { log, lines } = capturingLog();
    const whileOpen = await runOnce(dataDir, log);
    assert.deepEqual(whileOpen, { db: '0600', wal: '0600', shm: '0600' });
    assert.equal(mode(dataDir), '0700');
    for (const file of ['rewards.db', 'secret.key', 'operator-credentials.json']) assert.equal(mode(join(dataDir, file)), '0600', file);
    assert.deepEqual(
      lines.filter((line) => line.level >= 40),
      [],
      'nothing to warn about',
    );
  });

  it('files and the directory found open to other users are restricted, and the log names each with its old mode', async () => {
    const dataDir = join(root(), 'data');
    await runOnce(dataDir, capturingLog().log);
    // As an older version (or a copy with another umask) left them.
    chmodSync(dataDir, 0o755);
    const widened = ['rewards.db', 'rewards.db-wal', 'rewards.db-shm', 'secret.key'].filter((file) => existsSync(join(dataDir, file)));
    for (const file of widened) chmodSync(join(dataDir, file), 0o644);
    assert.ok(widened.includes('rewards.db') && widened.includes('secret.key'));

    const { log, lines } = capturingLog();
    const whileOpen = await runOnce(dataDir, log);
    assert.deepEqual(whileOpen, { db: '0600', wal: '0600', shm: '0600' });
    assert.equal(mode(dataDir), '0700');
    for (const file of widened) assert.equal(mode(join(dataDir, file)), '0600', file);
    const warnings = lines.filter((line) => line.level === 40);
    assert.deepEqual(warnings.find((line) => line.path === dataDir)?.mode, '0755', 'the directory is named with its old mode');
    for (const file of widened) assert.equal(warnings.find((line) => line.path === join(dataDir, file))?.mode, '0644', `${file} is named with its old mode`);
  });

  it('a shared directory (sticky bit, like /tmp) is left as it is and said so; the files in it are 0600 all the same', async () => {
    const shared = join(root(), 'shared');
    mkdirSync(shared);
    chmodSync(shared, 0o1777);
    const dataDir = join(root(), 'data');
    const { log, lines } = capturingLog();
    const whileOpen = await runOnce(dataDir, log, join(shared, 'rewards.db'));
    assert.deepEqual(whileOpen, { db: '0600', wal: '0600', shm: '0600' });
    assert.equal(mode(shared), '01777');
    assert.ok(
      lines.some((line) => line.path === shared && /left as it is \(it has the sticky bit/.test(line.msg)),
      JSON.stringify(lines),
    );
  });
});
