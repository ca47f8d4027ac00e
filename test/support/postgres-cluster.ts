import { execFile, spawnSync } from 'node:child_process';
import { appendFileSync, chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';

/**
 * Throwaway PostgreSQL 15 clusters for tests that need a cluster of their own (test/backup: a base
 * backup, WAL archiving and restores), made with the machine's binaries (`initdb`, `pg_ctl`,
 * `pg_basebackup`) in a temporary directory, on a free loopback port, with one superuser that
 * logs in with a password over TCP. PostgreSQL refuses to run as root: as root (CI) every binary
 * runs as the `postgres` user (`runuser`), who owns the directory; otherwise as the current user.
 * The machine's own cluster (scripts/postgres-setup.sh) is not touched.
 */

const PG_BIN = '/usr/lib/postgresql/15/bin';
const SUPERUSER = 'rewards';
const PASSWORD = 'rewards-backup-test';

const run = promisify(execFile);
const asRoot = process.getuid?.() === 0;

/** Why the binaries cannot be used here (undefined: they can). */
export function clusterUnavailable(): string | undefined {
  if (!existsSync(join(PG_BIN, 'initdb'))) return `${PG_BIN}/initdb is missing (Debian's postgresql-15)`;
  if (asRoot && spawnSync('id', ['-u', 'postgres']).status !== 0) return 'running as root and there is no postgres user to run PostgreSQL as';
  return undefined;
}

/** A program of PG_BIN (or any command), as the user PostgreSQL runs as. */
export async function runAsPostgres(command: string, args: string[], env: Record<string, string> = {}): Promise<string> {
  const program = command.includes('/') ? command : join(PG_BIN, command);
  const [file, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', 'env', ...Object.entries(env).map(([k, v]) => `${k}=${v}`), program, ...args]] : [program, args];
  try {
    // From a directory PostgreSQL's user may enter (it may not enter the checkout).
    const { stdout } = await run(file, argv, { env: { ...process.env, ...env }, cwd: tmpdir(), timeout: 120_000 });
    return stdout;
  } catch (error) {
    const { stderr, stdout } = error as { stderr?: string; stdout?: string };
    throw new Error(`${command} ${args.join(' ')}: ${(error as Error).message}\n${stdout ?? ''}${stderr ?? ''}`, { cause: error });
  }
}

/** A directory PostgreSQL's user owns (mkdtemp makes it 0700 for the current user). */
export function clusterDirectory(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  ownByPostgres(dir);
  return dir;
}

/** Gives a file or directory written by this process to PostgreSQL's user. */
export function ownByPostgres(path: string): void {
  if (!asRoot) return;
  const ids = (option: string) => Number(spawnSync('id', [option, 'postgres'], { encoding: 'utf8' }).stdout.trim());
  chownSync(path, ids('-u'), ids('-g'));
}

/** A loopback port nobody listens on now. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export interface Cluster {
  /** The data directory. */
  data: string;
  port: number;
  /** postgres://rewards:…@127.0.0.1:PORT/DATABASE */
  url(database: string): string;
  /** Runs one query as the superuser on `database` (default postgres). */
  query<T extends pg.QueryResultRow>(text: string, database?: string): Promise<T[]>;
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
}

/** A PostgreSQL connection string for the superuser: what pg_basebackup and the service use. */
function superuserUrl(port: number, database: string): string {
  return `postgres://${SUPERUSER}:${PASSWORD}@127.0.0.1:${port}/${database}`;
}

/** Appends settings to a data directory's postgresql.conf (a later line wins over an earlier one). */
export function configure(data: string, settings: Record<string, string | number>): void {
  const lines = Object.entries(settings).map(([name, value]) => `${name} = ${typeof value === 'number' ? value : `'${value.replaceAll("'", "''")}'`}`);
  appendFileSync(join(data, 'postgresql.conf'), `\n${lines.join('\n')}\n`);
}

/** Writes a file into a data directory, owned by PostgreSQL's user. */
export function writeDataFile(data: string, name: string, text: string): void {
  writeFileSync(join(data, name), text, { mode: 0o600 });
  ownByPostgres(join(data, name));
}

/** Starts the cluster in `data` on a free port (its socket in `data`, listening on 127.0.0.1 only) and waits until it accepts connections. */
export async function startCluster(data: string): Promise<Cluster> {
  const port = await freePort();
  configure(data, { port, listen_addresses: '127.0.0.1', unix_socket_directories: data });
  const log = `${data}.log`;
  await runAsPostgres('pg_ctl', ['-D', data, '-l', log, '-w', '-t', '60', 'start']).catch((error: Error) => {
    throw new Error(`${error.message}\n${existsSync(log) ? readFileSync(log, 'utf8').slice(-4000) : ''}`, { cause: error });
  });
  const cluster: Cluster = {
    data,
    port,
    url: (database) => superuserUrl(port, database),
    async query<T extends pg.QueryResultRow>(text: string, database = 'postgres') {
      const client = new pg.Client({ connectionString: superuserUrl(port, database) });
      await client.connect();
      try {
        return (await client.query<T>(text)).rows;
      } finally {
        await client.end();
      }
    },
    async stop(mode = 'fast') {
      await runAsPostgres('pg_ctl', ['-D', data, '-m', mode, '-w', 'stop']);
    },
  };
  return cluster;
}

/** A new cluster (initdb) in `dir`/data, its superuser SUPERUSER with a password (scram-sha-256 over TCP, replication included). */
export async function initCluster(dir: string, settings: Record<string, string | number> = {}): Promise<string> {
  const data = join(dir, 'data');
  const passwordFile = join(dir, 'password');
  writeFileSync(passwordFile, PASSWORD, { mode: 0o600 });
  ownByPostgres(passwordFile);
  await runAsPostgres('initdb', ['-D', data, '-U', SUPERUSER, `--pwfile=${passwordFile}`, '--auth=scram-sha-256', '-E', 'UTF8', '--no-instructions']);
  rmSync(passwordFile);
  configure(data, { shared_buffers: '32MB', ...settings });
  return data;
}

/** Stops whatever still runs in these data directories (ignoring those that are not running) and removes the directories. */
export async function removeClusters(dirs: string[], data: string[]): Promise<void> {
  for (const path of data) {
    if (existsSync(join(path, 'postmaster.pid'))) await runAsPostgres('pg_ctl', ['-D', path, '-m', 'immediate', '-w', 'stop']).catch(() => {});
  }
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
}
