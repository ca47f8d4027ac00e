import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { unusedPort } from './receivers.js';

/**
 * A real egress proxy for the OUTBOUND_PROXY tests: Debian's tinyproxy on 127.0.0.1, in the
 * foreground, unprivileged, with its own configuration and log in a temporary directory. Its log
 * (LogLevel Connect) names every CONNECT it was asked for, which is what the tests read.
 * `.ci/run` installs it; on a machine without it the tests say they were skipped (with CI or
 * REQUIRE_SNIPPET_RUNTIMES set they run, and fail).
 */

const TINYPROXY = '/usr/bin/tinyproxy';

/** Why the proxy tests are skipped here, or false when they run. */
export function tinyproxySkipReason(): string | false {
  if (existsSync(TINYPROXY) || process.env.CI || process.env.REQUIRE_SNIPPET_RUNTIMES) return false;
  return `no ${TINYPROXY} on this machine (apt-get install tinyproxy; .ci/run installs it). Set CI or REQUIRE_SNIPPET_RUNTIMES to make this a failure`;
}

export interface TinyproxyOptions {
  /** Ports CONNECT may reach (`ConnectPort`); default: any. `[1]` makes it refuse every real one with 403. */
  connectPorts?: number[];
  /** Credentials it requires (`BasicAuth`): without them it answers 407. */
  basicAuth?: { user: string; password: string };
}

export interface Tinyproxy {
  host: '127.0.0.1';
  port: number;
  /** `http://[user:password@]127.0.0.1:port`, for OUTBOUND_PROXY. */
  url(credentials?: { user: string; password: string }): string;
  /** The CONNECT targets asked for so far (`127.0.0.1:4000`), in order, from its log. */
  connects(): string[];
  /** Client connections it accepted so far, from its log. */
  connections(): number;
  /** Stops it; the port stays free for start(). */
  stop(): Promise<void>;
  /** Starts it again on the same port, with these options (default: as before). */
  start(options?: TinyproxyOptions): Promise<void>;
  /** Stops it and removes its directory. */
  close(): Promise<void>;
}

function configuration(dir: string, port: number, options: TinyproxyOptions): string {
  return [
    `Port ${port}`,
    'Listen 127.0.0.1',
    `LogFile "${join(dir, 'tinyproxy.log')}"`,
    'LogLevel Connect',
    `PidFile "${join(dir, 'tinyproxy.pid')}"`,
    'MaxClients 100',
    'Timeout 30',
    'Allow 127.0.0.1',
    ...(options.connectPorts ?? []).map((allowed) => `ConnectPort ${allowed}`),
    ...(options.basicAuth ? [`BasicAuth ${options.basicAuth.user} ${options.basicAuth.password}`] : []),
    '',
  ].join('\n');
}

async function accepting(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });
}

export async function startTinyproxy(initial: TinyproxyOptions = {}): Promise<Tinyproxy> {
  const dir = mkdtempSync(join(tmpdir(), 'rewards-tinyproxy-'));
  const port = await unusedPort();
  const logFile = join(dir, 'tinyproxy.log');
  let options = initial;
  let child: ChildProcess | undefined;
  // The log of every run on this port, runs stopped included.
  let earlierLogs = '';

  const log = () => earlierLogs + (existsSync(logFile) ? readFileSync(logFile, 'utf8') : '');

  async function start(next: TinyproxyOptions = options): Promise<void> {
    if (child) throw new Error('tinyproxy is already running');
    options = next;
    const configFile = join(dir, 'tinyproxy.conf');
    writeFileSync(configFile, configuration(dir, port, options));
    const started = spawn(TINYPROXY, ['-d', '-c', configFile], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    started.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    let exited = false;
    started.once('exit', () => (exited = true));
    child = started;
    // A test process that ends without its `after` (a failure, process.exit) does not leave the proxy running.
    const orphaned = () => started.kill('SIGKILL');
    process.once('exit', orphaned);
    started.once('exit', () => process.removeListener('exit', orphaned));
    const deadline = Date.now() + 5_000;
    while (!(await accepting(port))) {
      if (exited || Date.now() > deadline) {
        child = undefined;
        started.kill('SIGKILL');
        throw new Error(`tinyproxy did not start on 127.0.0.1:${port}: ${stderr.trim() || log().slice(-500)}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  async function stop(): Promise<void> {
    const running = child;
    if (!running) return;
    child = undefined;
    if (running.exitCode === null && running.signalCode === null) {
      const exited = new Promise((resolve) => running.once('exit', resolve));
      running.kill('SIGTERM');
      await exited;
    }
    earlierLogs = log();
    rmSync(logFile, { force: true });
  }

  await start();
  return {
    host: '127.0.0.1',
    port,
    url: (credentials) => `http://${credentials ? `${encodeURIComponent(credentials.user)}:${encodeURIComponent(credentials.password)}@` : ''}127.0.0.1:${port}`,
    connects: () => [...log().matchAll(/Request \(file descriptor \d+\): CONNECT (\S+) HTTP/g)].map((match) => match[1]!),
    connections: () => [...log().matchAll(/Connect \(file descriptor \d+\):/g)].length,
    stop,
    start,
    async close() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
