import { chmodSync, closeSync, existsSync, mkdirSync, openSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, relative, resolve } from 'node:path';
import type { Logger } from '../logger.js';

/**
 * The service's files hold request data, callback URLs, encrypted credentials, the secret key and
 * the operator's credentials: readable by the service's own user only, whatever the umask.
 * Files are 0600 and the directories the service owns 0700, also when they already exist with
 * wider modes (then a warning names the path and its old mode). A directory the service does not
 * own is left as it is, with a note in the log: one with the sticky bit (`/tmp`), one owned by
 * another user, the working directory or one of its parents (`DATABASE_URL=sqlite:rewards.db` in
 * a checkout), the home directory. The files in it are 0600 all the same. docs/deployment.md,
 * "File modes".
 */
export type FileModeLog = Pick<Logger, 'warn' | 'info'>;

const PRIVATE_FILE_MODE = 0o600;
const PRIVATE_DIRECTORY_MODE = 0o700;

const octal = (mode: number) => `0${(mode & 0o777).toString(8)}`;

/** Without a logger (benchmarks, tools), a widened mode is still fixed and said on stderr. */
const STDERR_LOG: FileModeLog = {
  warn: ((details: object, message: string) => process.emitWarning(`${message} ${JSON.stringify(details)}`)) as FileModeLog['warn'],
  info: () => {},
};

function sharedReason(path: string, stat: { mode: number; uid: number }): string | undefined {
  if (stat.mode & 0o1000) return 'it has the sticky bit (a shared directory like /tmp)';
  if (typeof process.getuid === 'function' && stat.uid !== process.getuid()) return 'another user owns it';
  const fromHere = relative(path, process.cwd());
  if (fromHere === '' || !fromHere.startsWith('..')) return 'it is the working directory or one of its parents';
  if (resolve(path) === resolve(homedir())) return 'it is the home directory';
  return undefined;
}

/** Creates `path` (and missing parents) 0700, or restricts it to 0700 when the service owns it. */
export function ensurePrivateDirectory(path: string, log: FileModeLog = STDERR_LOG): void {
  const directory = resolve(path);
  if (!existsSync(directory)) {
    mkdirSync(directory, { recursive: true, mode: PRIVATE_DIRECTORY_MODE });
    chmodSync(directory, PRIVATE_DIRECTORY_MODE);
    return;
  }
  const stat = statSync(directory);
  if ((stat.mode & 0o077) === 0) return;
  const shared = sharedReason(directory, stat);
  if (shared) {
    log.info({ path: directory, mode: octal(stat.mode) }, `data directory left as it is (${shared}); the service's files in it are 0600`);
    return;
  }
  chmodSync(directory, PRIVATE_DIRECTORY_MODE);
  log.warn({ path: directory, mode: octal(stat.mode), newMode: octal(PRIVATE_DIRECTORY_MODE) }, 'data directory was open to other users: restricted to its owner');
}

/** Restricts an existing file to 0600; says so when it was wider. */
export function restrictFile(path: string, log: FileModeLog = STDERR_LOG): void {
  if (!existsSync(path)) return;
  const mode = statSync(path).mode;
  if ((mode & 0o077) === 0) return;
  chmodSync(path, PRIVATE_FILE_MODE);
  log.warn({ path, mode: octal(mode), newMode: octal(PRIVATE_FILE_MODE) }, 'file was open to other users: restricted to its owner');
}

const SQLITE_COMPANIONS = ['', '-wal', '-shm', '-journal'];

/**
 * Before SQLite opens `path`: its directory private, the database created 0600 when missing (SQLite
 * gives its -wal and -shm files the database's mode), and existing files restricted.
 */
export function prepareSqliteFiles(path: string, log: FileModeLog = STDERR_LOG): void {
  ensurePrivateDirectory(dirname(path), log);
  if (!existsSync(path)) closeSync(openSync(path, 'a', PRIVATE_FILE_MODE));
  for (const suffix of SQLITE_COMPANIONS) restrictFile(`${path}${suffix}`, log);
}

/** After SQLite opened `path` in WAL mode: the -wal and -shm files it made (with the database's mode, checked anyway). */
export function restrictSqliteCompanions(path: string, log: FileModeLog = STDERR_LOG): void {
  for (const suffix of SQLITE_COMPANIONS) restrictFile(`${path}${suffix}`, log);
}
