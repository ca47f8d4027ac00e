import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, openSync, readFileSync, rmSync, writeFileSync, closeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from './logger.js';

/** The built console the API serves at /console/ (docs/console.md). */
export const CONSOLE_DIST_DIR = fileURLToPath(new URL('../console/dist', import.meta.url));
/** `npm run build:console`: the frontend's Node build script. */
export const CONSOLE_BUILD_SCRIPT = fileURLToPath(new URL('../scripts/build-console.mjs', import.meta.url));

export interface ConsoleBuild {
  /** What GET /console/ answers in its 503 while index.html is missing. */
  notBuiltDetail: () => string;
  /** Stops a build this process started (the server is closing). */
  stop(): void;
}

type State = 'built' | 'building' | 'building-elsewhere' | 'failed' | 'no-script';

const DETAIL: Record<State, string> = {
  built: 'the console is not built: run `npm run build:console`',
  building: 'the console is being built (its files were missing at start); retry in a moment',
  'building-elsewhere': 'the console is being built by another process; retry in a moment',
  failed: 'the console build failed at start (see the service log); run `npm run build:console`',
  'no-script': 'the console is not built and its build script is missing: run `npm run build:console`',
};

/**
 * `npm ci && npm start` is the whole set-up: when the console's `index.html` is missing at start,
 * the API process builds it, in the background (a build takes seconds; the API answers at once and
 * `/console/` says 503 until the files are there). One build per machine at a time: a lock file
 * in the temporary directory holds the builder's pid, so several processes started together (or
 * the tests' child services) do not build into the same directory at once.
 */
export function ensureConsoleBuilt(options: { dir: string; script: string; log: Logger; execPath?: string }): ConsoleBuild {
  const dir = resolve(options.dir);
  const { log } = options;
  let state: State = 'built';
  let child: ChildProcess | undefined;
  const build: ConsoleBuild = {
    notBuiltDetail: () => DETAIL[state],
    stop() {
      if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    },
  };
  if (existsSync(join(dir, 'index.html'))) return build;
  if (!existsSync(options.script)) {
    state = 'no-script';
    // A checkout with the console's sources but not its build script is broken: a warning. One
    // without a console directory at all carries no console (a package of the API alone).
    const level = existsSync(dirname(dir)) ? 'warn' : 'info';
    log[level]({ dir, script: options.script }, 'the console is not built and its build script is missing: /console/ answers 503 until index.html exists (npm run build:console)');
    return build;
  }
  const lock = join(tmpdir(), `rewards-console-build-${createHash('sha256').update(dir).digest('hex').slice(0, 16)}.lock`);
  if (!takeLock(lock)) {
    state = 'building-elsewhere';
    log.info({ dir }, 'the console is not built; another process is building it: /console/ answers 503 until it is done');
    return build;
  }
  state = 'building';
  // Info, not a warning: the first start of a fresh checkout without `prepare` is a normal case.
  log.info({ dir, script: options.script }, 'the console is not built: building it in the background (npm run build:console); /console/ answers 503 until it is done');
  let output = '';
  const keep = (chunk: Buffer) => (output = (output + chunk.toString('utf8')).slice(-4000));
  child = spawn(options.execPath ?? process.execPath, [options.script], { cwd: dirname(dirname(options.script)), stdio: ['ignore', 'pipe', 'pipe'] });
  if (child.pid !== undefined) writeFileSync(lock, String(child.pid));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  let finished = false;
  const finish = (code: number | null, error?: Error) => {
    if (finished) return;
    finished = true;
    rmSync(lock, { force: true });
    if (code === 0 && existsSync(join(dir, 'index.html'))) {
      state = 'built';
      log.info({ dir }, 'console built');
    } else {
      state = 'failed';
      log.error({ dir, exitCode: code, err: error, output }, 'the console build failed: /console/ answers 503; run `npm run build:console` to see why');
    }
  };
  child.once('error', (error) => finish(null, error));
  child.once('close', (code) => finish(code));
  return build;
}

/** Creates the lock file; a lock whose process is gone is taken over. */
function takeLock(lock: string): boolean {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(lock, 'wx');
      writeFileSync(fd, String(process.pid));
      closeSync(fd);
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const text = readFileSync(lock, 'utf8').trim();
      // Empty: another process has just created it and is writing its pid.
      if (text === '' || processExists(Number(text))) return false;
      rmSync(lock, { force: true });
    }
  }
  return false;
}

function processExists(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
