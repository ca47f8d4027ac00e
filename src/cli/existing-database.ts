import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import pg from 'pg';
import { ConfigError, maskDatabaseUrl, type Config } from '../config.js';
import { describeFrom, type Settings } from '../config-file.js';
import { secretKeyFile } from '../deps.js';
import { openSqliteDatabase } from '../storage/sqlite-driver.js';

/**
 * The operator's commands (accounts, clients, experiences, keys, secrets, console) work on the
 * service's database; they never create one, nor a SECRET_KEY. Run without the service's settings
 * they would otherwise make a new, empty database of their own (./data/rewards.db and its
 * secret.key in whatever directory they were run from) and report success. `rewards serve` and
 * `rewards migrate` create the database; these checks say which database was looked for, where
 * that setting came from, and how to give the right one.
 */

/** The migrations' bookkeeping table: a database without it was never migrated, so it is not the service's. */
const MIGRATION_TABLE = 'kysely_migration';

const WHAT_TO_DO = [
  "This command works on the service's existing database and does not create one. To use the service's:",
  "  - name the service's configuration file: --config FILE, or REWARDS_CONFIG=FILE in the environment;",
  '  - or set DATABASE_URL and SECRET_KEY (with SQLite: DATA_DIR) as the service has them.',
  '`rewards config show` prints the settings a command sees and where each comes from.',
  "A new database is made by the service's first start (rewards serve) or by rewards migrate.",
].join('\n  ');

/** Where a setting came from, in words: the environment, the configuration file, or the default. */
function settingOrigin(settings: Settings, name: string): string {
  const source = settings.sourceOf(name);
  if (source === 'environment') return `${name} is set in the environment`;
  if (source === 'config file') return `${name} is set in ${settings.file!.path} (${describeFrom(settings.file!.from)})`;
  return `${name} is not set`;
}

/** Which configuration file was read, or where none was found. */
export function configFileNote(settings: Settings): string {
  if (settings.file) return `Configuration file: ${settings.file.path} (${describeFrom(settings.file.from)}).`;
  return `No configuration file was found (looked for ${settings.searched.join(' and ')}).`;
}

function dataDirOrigin(settings: Settings, config: Config, either = true): string {
  return settings.sourceOf('DATA_DIR') === 'default'
    ? `DATA_DIR is not set${either ? ' either' : ''}, so it is ./data in the working directory (${config.dataDir})`
    : `${settingOrigin(settings, 'DATA_DIR')} (${config.dataDir})`;
}

function databaseOrigin(settings: Settings, config: Config): string {
  if (settings.sourceOf('DATABASE_URL') !== 'default') return `${settingOrigin(settings, 'DATABASE_URL')}.`;
  return `DATABASE_URL is not set, so it is the default, rewards.db in DATA_DIR; ${dataDirOrigin(settings, config)}.`;
}

function refuse(what: string, origin: string, settings: Settings): never {
  throw new ConfigError(`${what}\n  ${origin}\n  ${configFileNote(settings)}\n  ${WHAT_TO_DO}`);
}

/** Refuses (a ConfigError, exit 2) when DATABASE_URL names no database of the service: a missing SQLite file, a PostgreSQL schema never migrated. */
export async function requireExistingDatabase(config: Config, settings: Settings): Promise<void> {
  if (config.databaseUrl.startsWith('sqlite:')) return requireSqliteDatabase(config, settings);
  return requirePostgresDatabase(config, settings);
}

async function requireSqliteDatabase(config: Config, settings: Settings): Promise<void> {
  const path = config.databaseUrl.slice('sqlite:'.length);
  const origin = databaseOrigin(settings, config);
  if (path === ':memory:') refuse('The database is sqlite::memory:, an empty database that lives only as long as this command.', origin, settings);
  const file = resolve(path);
  if (!existsSync(file)) refuse(`There is no database at ${file}.`, origin, settings);
  let migrated: boolean;
  try {
    // fileMustExist: the driver must not create it between the check above and this open.
    const sqlite = openSqliteDatabase(file, { fileMustExist: true });
    try {
      migrated = sqlite.prepare("select 1 from sqlite_master where type = 'table' and name = ?").get(MIGRATION_TABLE) !== undefined;
    } finally {
      sqlite.close();
    }
  } catch (error) {
    refuse(`${file} cannot be read as a SQLite database (${(error as Error).message}).`, origin, settings);
  }
  if (!migrated) refuse(`The database at ${file} has none of the service's tables: it is not the service's database, or the service never started on it.`, origin, settings);
}

/** `the PostgreSQL database "rewards" on db.internal:5432 as rewards` (no password). */
function describePostgres(url: string): string {
  try {
    const parsed = new URL(url);
    const database = decodeURIComponent(parsed.pathname.slice(1)) || decodeURIComponent(parsed.username) || '(the user name)';
    const host = parsed.hostname || parsed.searchParams.get('host') || 'localhost';
    return `the PostgreSQL database "${database}" on ${host}:${parsed.port || '5432'}${parsed.username ? ` as ${decodeURIComponent(parsed.username)}` : ''}`;
  } catch {
    return `the PostgreSQL database ${maskDatabaseUrl(url)}`;
  }
}

async function requirePostgresDatabase(config: Config, settings: Settings): Promise<void> {
  const origin = databaseOrigin(settings, config);
  const database = describePostgres(config.databaseUrl);
  const client = new pg.Client({ connectionString: config.databaseUrl, connectionTimeoutMillis: 10_000 });
  client.on('error', () => {});
  let row: { schema: string | null; migrated: boolean } | undefined;
  try {
    await client.connect();
    row = (await client.query<{ schema: string | null; migrated: boolean }>('select current_schema() as schema, to_regclass($1) is not null as migrated', [MIGRATION_TABLE])).rows[0];
  } catch (error) {
    const code = (error as { code?: string }).code;
    const message = `Cannot use ${database}: ${(error as Error).message}.`;
    // A database that does not exist is a setting to fix; anything else (refused, timed out) may pass.
    if (code === '3D000') refuse(message, origin, settings);
    throw new Error(`${message}\n  ${origin}\n  ${configFileNote(settings)}`, { cause: error });
  } finally {
    await client.end().catch(() => {});
  }
  if (!row?.migrated) {
    const where = row?.schema ? `schema "${row.schema}"` : 'its search_path (none of whose schemas exists)';
    refuse(`${database[0]!.toUpperCase()}${database.slice(1)} has none of the service's tables in ${where}: it was never migrated, so it is not the service's database.`, origin, settings);
  }
}

/** Refuses when there is no SECRET_KEY to use: not set, and (SQLite) no key file made by the service's first start. Never makes one. */
export function requireSecretKey(config: Config, settings: Settings): void {
  if (config.secretKey || !config.databaseUrl.startsWith('sqlite:')) return;
  const file = secretKeyFile(config);
  if (existsSync(file)) return;
  refuse(
    `SECRET_KEY is not set, and there is no key file at ${file} (the service writes it at its first start when it has no SECRET_KEY). The stored secrets are encrypted with the service's key, and this command never makes a new one.`,
    `SECRET_KEY is not set in the environment${settings.file ? ` nor in ${settings.file.path}` : ''}; the key file is looked for in DATA_DIR: ${dataDirOrigin(settings, config, false)}.`,
    settings,
  );
}
