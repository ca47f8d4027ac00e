import { closeSync, existsSync, fsyncSync, linkSync, openSync, realpathSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { invalid } from '../domain/errors.js';
import { openSqliteDatabase } from './sqlite-driver.js';

/**
 * `rewards backup FILE` (docs/deployment.md, "Backups and restore"): an online, consistent copy of
 * the embedded SQLite database while the service writes to it.
 *
 * How: SQLite's online backup API (better-sqlite3 `backup()`), all pages in ONE step. The service
 * keeps its database in WAL mode (database.ts), where a read transaction blocks no writer: the step
 * reads one snapshot of the database while the service goes on committing to the WAL. The other
 * ways were measured (244 MB database, another process committing 20 rows every 5 ms, FULL sync,
 * on this project's 2-core test machine):
 *   - one step: 0.5 s; the writer never waited for a lock, its slowest commit 100 ms (7 ms without
 *     a backup running: disk and CPU shared with the copy, no lock);
 *   - the API's default 100-page steps release the snapshot between steps, and every commit of
 *     another process restarts the copy from page 1: it finished only when the writer stopped
 *     (25,000 steps). Stepping is for rollback-journal databases, whose readers block writers;
 *   - `VACUUM INTO`: also one read transaction, 0.76 s, slowest commit 146 ms. It rebuilds every
 *     table and index (more CPU on the service's host), and SQLite does not fsync what it writes.
 * The snapshot does hold back checkpoints: the WAL grows for as long as the copy runs, then shrinks.
 *
 * The copy is written to FILE.partial-PID (0600 from its creation), checked with
 * `PRAGMA integrity_check`, fsynced, and only then given FILE's name: a backup that failed or was
 * interrupted never leaves a file under that name, nor replaces an older backup there.
 */

/** sqlite3_backup_step(n) copies n pages; this many means "all of them, in this step". */
const ALL_PAGES = 0x7fffffff;
const COMPANIONS = ['-wal', '-shm', '-journal'];

export interface SqliteBackupReport {
  /** The backup's absolute path. */
  file: string;
  bytes: number;
  pages: number;
  /** The whole command: copy, check and fsync. */
  durationMs: number;
  /** What `PRAGMA integrity_check` answered on the copy: always "ok" in a report (otherwise the backup failed). */
  integrity: 'ok';
}

function samePath(a: string, b: string): boolean {
  const real = (path: string) => (existsSync(path) ? realpathSync(path) : resolve(path));
  return real(a) === real(b);
}

function removeWithCompanions(path: string): void {
  for (const suffix of ['', ...COMPANIONS]) rmSync(`${path}${suffix}`, { force: true });
}

function fsyncPath(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** `PRAGMA integrity_check` on the copy: "ok", or the copy is not a backup. */
function checkIntegrity(path: string): void {
  const copy = openSqliteDatabase(path, { fileMustExist: true });
  try {
    const rows = copy.pragma('integrity_check') as { integrity_check: string }[];
    const answers = rows.map((row) => row.integrity_check);
    if (answers.length !== 1 || answers[0] !== 'ok') throw new Error(`the copy failed PRAGMA integrity_check: ${answers.slice(0, 5).join('; ')}`);
  } finally {
    // The last connection to close checkpoints and deletes the copy's -wal and -shm.
    copy.close();
  }
}

/**
 * Copies the SQLite database at `source` to `destination` (see above). Refuses an existing
 * destination unless `force`, and the database itself or one of its companion files.
 */
export async function backupSqliteDatabase(source: string, destination: string, options: { force?: boolean; busyTimeoutMs?: number } = {}): Promise<SqliteBackupReport> {
  const started = performance.now();
  const file = resolve(destination);
  const directory = dirname(file);
  if (!existsSync(directory) || !statSync(directory).isDirectory()) throw invalid(`cannot write the backup to ${file}: the directory ${directory} does not exist`);
  if (['', ...COMPANIONS].some((suffix) => samePath(file, `${source}${suffix}`))) throw invalid(`${file} is the service's database (or one of its files): give the backup another name`);
  if (existsSync(file) && statSync(file).isDirectory()) throw invalid(`${file} is a directory: give the backup file's name`);
  const existing = ['', '-wal', '-journal'].map((suffix) => `${file}${suffix}`).filter((path) => existsSync(path));
  if (existing.length > 0 && !options.force) throw invalid(`${existing.join(' and ')} already exist${existing.length === 1 ? 's' : ''}: give --force to replace it, or another file name`);

  const partial = join(directory, `${basename(file)}.partial-${process.pid}`);
  removeWithCompanions(partial);
  // 0600 before the first byte, like the database (private-files.ts); the backup API writes into it.
  closeSync(openSync(partial, 'wx', 0o600));
  try {
    const database = openSqliteDatabase(source, { fileMustExist: true });
    let pages: number;
    try {
      database.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 5_000}`);
      // better-sqlite3's first step copies no page; the progress callback sets every later step's size.
      ({ totalPages: pages } = await database.backup(partial, { progress: () => ALL_PAGES }));
    } finally {
      database.close();
    }
    checkIntegrity(partial);
    fsyncPath(partial);
    if (options.force) {
      // A -wal left beside an older file of that name would be replayed into the new one.
      for (const suffix of COMPANIONS) rmSync(`${file}${suffix}`, { force: true });
      renameSync(partial, file);
    } else {
      // link() refuses a name taken meanwhile, where rename() would replace it.
      try {
        linkSync(partial, file);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'EEXIST') throw invalid(`${file} appeared while the backup ran: give --force to replace it, or another file name`);
        throw error;
      }
      rmSync(partial);
    }
    fsyncPath(directory);
    return { file, bytes: statSync(file).size, pages, durationMs: Math.round(performance.now() - started), integrity: 'ok' };
  } finally {
    removeWithCompanions(partial);
  }
}
