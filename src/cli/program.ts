import { existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { Command, CommanderError, Option } from 'commander';
import { CONFIG_VARIABLES, ConfigError, loadConfig, maskSecret, parsePublicUrl, type Config, type Env } from '../config.js';
import { loadSettings, type Settings } from '../config-file.js';
import { createDeps, createLogger, secretKeyFile, type Deps } from '../deps.js';
import { configFileNote, requireExistingDatabase, requireSecretKey } from './existing-database.js';
import { createAccount, createClient, checkClientScopes, resolveScopes, rotateClientSecret } from '../services/accounts.js';
import { findAccountByIdOrName } from '../storage/repositories/accounts.js';
import { importExperiences } from '../services/experiences.js';
import { reencryptSecrets } from '../services/reencrypt-secrets.js';
import { createConsoleLink, parseConsoleTokenTtl } from '../services/console-links.js';
import { DomainError, invalid, notFound } from '../domain/errors.js';
import { parseImportFile } from '../domain/experiences/import-file.js';
import { finishPartitionedIndexes, migrateToLatest } from '../storage/migrations/index.js';
import { openStorage } from '../storage/database.js';
import { startServer, type Role } from '../server.js';
import { iso } from '../domain/time.js';
import { addListenCommand } from './listen.js';
import { addDemoCommand } from './demo.js';
import { addBackupCommand } from './backup.js';

/** The settings of this run (the configuration file under the environment) and the configuration they make. */
interface Effective {
  settings: Settings;
  config: Config;
}

function loadEffective(io: CliIo, configFile: string | undefined): Effective {
  const settings = loadSettings({ configFile, env: io.env });
  try {
    const config = loadConfig(settings.env, { origin: (name) => (settings.sourceOf(name) === 'config file' ? `in ${settings.file!.path}` : undefined) });
    return { settings, config };
  } catch (error) {
    if (error instanceof ConfigError) throw new ConfigError(`${error.message}\n  ${configFileNote(settings)}`);
    throw error;
  }
}

/**
 * Opens the service's existing database for one command, runs it, closes it; errors become one
 * line on stderr. A database or SECRET_KEY that is not there is refused, never created
 * (existing-database.ts).
 */
async function withDeps<T>(io: CliIo, effective: () => Effective, run: (deps: Deps) => Promise<T>): Promise<void> {
  const { config, settings } = effective();
  await requireExistingDatabase(config, settings);
  requireSecretKey(config, settings);
  // Log lines go to stderr: stdout is the command's JSON.
  const deps = await createDeps(config, { log: createLogger(config, { write: io.err }), generateSecretKey: false });
  try {
    io.out(`${JSON.stringify(await run(deps))}\n`);
  } finally {
    await deps.close();
  }
}

async function requireAccount(deps: Deps, idOrName: string) {
  const account = await findAccountByIdOrName(deps.db, idOrName);
  if (!account) throw notFound(`account "${idOrName}"`);
  return account;
}

/** Where a run of the CLI reads its settings and writes its output: the process, or a test. */
export interface CliIo {
  env: Env;
  out: (text: string) => void;
  err: (text: string) => void;
}

const processIo: CliIo = {
  env: process.env,
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
};

/** The `rewards` commands, built afresh for each run (commander keeps parsed options on them). */
function buildProgram(io: CliIo): Command {
  const program = new Command()
    .name('rewards')
    .description('Reward Request Service: API server, background worker and operator commands. Output is JSON.')
    .showHelpAfterError()
    .exitOverride()
    .configureOutput({ writeOut: io.out, writeErr: io.err })
    .option('--config <file>', 'the configuration file (KEY=VALUE lines; default: REWARDS_CONFIG, else ./rewards.env, else /etc/rewards/rewards.env); environment variables override it');
  const effective = () => loadEffective(io, program.opts<{ config?: string }>().config);

  program
    .command('serve')
    .description('run the HTTP API and/or the background worker')
    .addOption(new Option('--role <role>', 'what this process runs').choices(['all', 'api', 'worker']).default('all'))
    .action(async (options: { role: Role }) => {
      const { config, settings } = effective();
      const server = await startServer(config, options.role);
      if (settings.file) server.deps.log.info({ file: settings.file.path, from: settings.file.from }, 'settings read from the configuration file (environment variables override it)');
      const shutdown = (signal: string) => {
        server.deps.log.info({ signal }, 'shutting down');
        const force = setTimeout(() => process.exit(1), 30_000);
        force.unref();
        server.close().then(
          () => process.exit(0),
          () => process.exit(1),
        );
      };
      process.once('SIGTERM', () => shutdown('SIGTERM'));
      process.once('SIGINT', () => shutdown('SIGINT'));
    });

  program
    .command('migrate')
    .description('create the database when there is none, or bring its schema up to date')
    .action(async () => {
      const { config } = effective();
      // Connecting and waiting for the lock are bounded as everywhere; the migrations' own statements are not (an index build may take minutes).
      const log = createLogger(config, { write: io.err });
      const storage = openStorage(config.databaseUrl, { log, preparedStatements: config.databasePreparedStatements, bounds: config.databaseBounds });
      try {
        const report = await storage.withoutStatementBound(async () => {
          const migrated = await migrateToLatest(storage.db);
          // To the end, repairing what a build that died left (partitioned-indexes.ts).
          const indexes = await finishPartitionedIndexes(storage.db as never, { repair: true, log: (message, error) => log.warn({ err: error }, message) });
          return { ...migrated, ...(indexes.length > 0 ? { indexesBuilt: indexes } : {}) };
        });
        io.out(`${JSON.stringify(report)}\n`);
      } finally {
        await storage.close();
      }
    });

  const accounts = program.command('accounts').description('manage client accounts');
  accounts
    .command('create')
    .description('create a client account')
    .requiredOption('--name <name>', 'unique account name')
    .action((options: { name: string }) =>
      withDeps(io, effective, async (deps) => {
        const account = await createAccount(deps.db, options.name, { field: '--name' });
        return { id: account.id, name: account.name };
      }),
    );

  const clients = program.command('clients').description('manage OAuth clients');
  clients
    .command('create')
    .description('create an OAuth client for an account; the secret is shown once')
    .requiredOption('--account <idOrName>', 'account id or name')
    .option('--scopes <scopes>', 'space-separated scopes (default: every scope except admin)')
    .action((options: { account: string; scopes?: string }) =>
      withDeps(io, effective, async (deps) => {
        const account = await requireAccount(deps, options.account);
        const scopes = resolveScopes(options.scopes, '--scopes');
        checkClientScopes(account, scopes, '--scopes');
        const issued = await createClient(deps.db, account.id, scopes);
        return { accountId: account.id, client_id: issued.client.clientId, client_secret: issued.clientSecret, scopes: issued.client.scopes.join(' ') };
      }),
    );
  clients
    .command('rotate-secret')
    .description('issue a new secret; the previous one stays valid for 24 hours')
    .argument('<clientId>', 'the client to rotate')
    .action((clientId: string) =>
      withDeps(io, effective, async (deps) => {
        const issued = await rotateClientSecret(deps.db, clientId);
        return {
          client_id: issued.client.clientId,
          client_secret: issued.clientSecret,
          previous_secret_valid_until: iso(issued.client.previousSecretExpiresAt!),
        };
      }),
    );

  const experiences = program.command('experiences').description('manage experiences (campaigns) and their prizes');
  experiences
    .command('import')
    .description('create or replace (by name) the experiences in a JSON file: one experience object or an array; all or nothing')
    .argument('<file>', 'JSON file, same shape as the admin API body (docs/operators.md)')
    .requiredOption('--account <idOrName>', 'account id or name the experiences belong to')
    .action((file: string, options: { account: string }) =>
      withDeps(io, effective, async (deps) => {
        const text = await readFile(file, 'utf8').catch((error: Error) => {
          throw invalid(`cannot read ${file}: ${error.message}`);
        });
        const inputs = parseImportFile(text);
        const account = await requireAccount(deps, options.account);
        const imported = await importExperiences(deps.db, account.id, inputs, deps.clock());
        return { imported: imported.map(({ id, name }) => ({ id, name })) };
      }),
    );

  const secrets = program.command('secrets').description('secrets stored encrypted with SECRET_KEY (callback credentials, signing secrets, token signing keys)');
  secrets
    .command('reencrypt')
    .description('seal every stored secret with the current SECRET_KEY, reading older ones with SECRET_KEY_PREVIOUS; in batches, safe to interrupt and run again')
    .option('--batch-size <rows>', 'rows per transaction', '500')
    .action((options: { batchSize: string }) =>
      withDeps(io, effective, async (deps) => {
        const batchSize = Number(options.batchSize);
        if (!Number.isInteger(batchSize) || batchSize < 1) throw invalid('--batch-size must be a whole number ≥ 1');
        return reencryptSecrets(deps.db, deps.box, { batchSize });
      }),
    );

  const consoleCommand = program.command('console').description('the web console served at /console/ (docs/console.md)');
  consoleCommand
    .command('link')
    .description('make a one-time sign-in link to the console for an account: the code in its URL works once, for 10 minutes')
    .requiredOption('--account <idOrName>', 'account id or name')
    .option('--ttl <duration>', 'lifetime of the token the link grants (at most 24h)', '1h')
    .option('--base-url <url>', "the service's address as a browser reaches it (default: PUBLIC_URL, else http://HOST:PORT)")
    .action((options: { account: string; ttl: string; baseUrl?: string }) =>
      withDeps(io, effective, async (deps) => {
        const ttlMs = parseConsoleTokenTtl(options.ttl, '--ttl');
        const publicUrl = options.baseUrl === undefined ? deps.config.publicUrl : baseUrlOption(options.baseUrl);
        // Only the service knows where it answers: a link built from defaults is a guess, and says so.
        if (options.baseUrl === undefined && effective().settings.sourceOf('PUBLIC_URL') === 'default') {
          io.err(`rewards: PUBLIC_URL is not set here, so the link assumes the service answers at ${publicUrl}; if it answers elsewhere, give --base-url or PUBLIC_URL as the service has it\n`);
        }
        return createConsoleLink({ ...deps, config: { publicUrl } }, (await requireAccount(deps, options.account)).id, ttlMs);
      }),
    );

  const keys = program.command('keys').description('manage token signing keys');
  keys
    .command('rotate')
    .description('sign new tokens with a new key; the previous key verifies until its tokens expire')
    .action(() =>
      withDeps(io, effective, async (deps) => {
        const { kid } = await deps.keys.rotate(deps.config.tokenTtlMs);
        return { kid, previous_keys_valid_until: iso(deps.clock() + deps.config.tokenTtlMs) };
      }),
    );
  addListenCommand(program, io, effective);
  addDemoCommand(program, io, effective);
  addBackupCommand(program, io, effective);
  const configCommand = program.command('config').description('the settings the commands and the service read (docs/operators.md)');
  configCommand
    .command('show')
    .description('print the effective settings, each with where it comes from (environment, config file, default); secrets masked')
    .action(() => {
      const { config, settings } = effective();
      io.out(`${JSON.stringify(showSettings(config, settings))}\n`);
    });
  return program;
}

/** `rewards config show`: which file was read, and every setting with its effective value and its source. */
function showSettings(config: Config, settings: Settings) {
  const values: Record<string, { value: string | null; source: string; keyFile?: string }> = {};
  for (const [name, format] of Object.entries(CONFIG_VARIABLES)) values[name] = { value: format(config), source: settings.sourceOf(name) };
  // SQLite without SECRET_KEY: the key the service generated into DATA_DIR (masked), if it has.
  if (config.secretKey === undefined && config.databaseUrl.startsWith('sqlite:')) {
    const keyFile = secretKeyFile(config);
    let key: string | undefined;
    try {
      key = existsSync(keyFile) ? readFileSync(keyFile, 'utf8').trim() : undefined;
    } catch {
      key = undefined; // there, but not readable by this user: shown as its path only
    }
    values.SECRET_KEY = key !== undefined ? { value: maskSecret(key), source: 'key file', keyFile } : { value: null, source: existsSync(keyFile) ? 'key file' : 'default', keyFile };
  }
  return {
    configFile: settings.file ? { path: settings.file.path, from: settings.file.from } : null,
    ...(settings.file?.from === 'default location' || !settings.file ? { searched: settings.searched } : {}),
    settings: values,
  };
}

function baseUrlOption(raw: string): string {
  try {
    return parsePublicUrl(raw);
  } catch {
    throw invalid(`--base-url must be an http(s) URL, got "${raw}"`);
  }
}

/**
 * Runs one command line (the arguments after `rewards`) and answers its exit code: 0, 1 for a
 * failure or a usage error, 2 for what the operator got wrong (a DomainError, a bad setting: a
 * ConfigError). The one place where an error becomes an exit code and a line on stderr.
 */
export async function runCli(args: readonly string[], io: CliIo = processIo): Promise<number> {
  try {
    await buildProgram(io).parseAsync(args, { from: 'user' });
    return 0;
  } catch (error) {
    // --help and usage errors: commander has written the text already.
    if (error instanceof CommanderError) return error.exitCode;
    if (error instanceof ConfigError || error instanceof DomainError) {
      const details = error instanceof DomainError && error.errors ? error.errors.map((e) => `\n  ${e.path}: ${e.message}`).join('') : '';
      io.err(`rewards: ${error.message}${details}\n`);
      return 2;
    }
    // Operators get the message; the stack only when they ask for it with LOG_LEVEL=debug.
    const verbose = ['debug', 'trace'].includes(io.env.LOG_LEVEL ?? '');
    io.err(`rewards: ${verbose ? ((error as Error).stack ?? String(error)) : ((error as Error).message ?? String(error))}\n`);
    return 1;
  }
}
