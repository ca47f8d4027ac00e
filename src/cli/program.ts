import { readFile } from 'node:fs/promises';
import { Command, CommanderError, Option } from 'commander';
import { ConfigError, loadConfig, parsePublicUrl, type Env } from '../config.js';
import { createDeps, createLogger, type Deps } from '../deps.js';
import {
  createAccount,
  createClient,
  checkClientScopes,
  resolveScopes,
  rotateClientSecret,
} from '../services/accounts.js';
import { findAccountByIdOrName } from '../storage/repositories/accounts.js';
import { importExperiences } from '../services/experiences.js';
import { reencryptSecrets } from '../services/reencrypt-secrets.js';
import { createConsoleLink, parseConsoleTokenTtl } from '../services/console-links.js';
import { DomainError, invalid, notFound } from '../domain/errors.js';
import { parseImportFile } from '../domain/experiences/import-file.js';
import { migrateToLatest } from '../storage/migrations/index.js';
import { openStorage } from '../storage/database.js';
import { startServer, type Role } from '../server.js';
import { iso } from '../domain/time.js';

/** Opens the database for one command, runs it, closes it; errors become one line on stderr. */
async function withDeps<T>(io: CliIo, run: (deps: Deps) => Promise<T>): Promise<void> {
  const config = loadConfig(io.env);
  // Log lines go to stderr: stdout is the command's JSON.
  const deps = await createDeps(config, { log: createLogger(config, { write: io.err }) });
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
  out(text: string): void;
  err(text: string): void;
}

export const processIo: CliIo = {
  env: process.env,
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
};

/** The `rewards` commands, built afresh for each run (commander keeps parsed options on them). */
export function buildProgram(io: CliIo): Command {
  const program = new Command()
    .name('rewards')
    .description('Reward Request Service: API server, background worker and operator commands. Output is JSON.')
    .showHelpAfterError()
    .exitOverride()
    .configureOutput({ writeOut: io.out, writeErr: io.err });

  program
    .command('serve')
    .description('run the HTTP API and/or the background worker')
    .addOption(new Option('--role <role>', 'what this process runs').choices(['all', 'api', 'worker']).default('all'))
    .action(async (options: { role: Role }) => {
      const config = loadConfig(io.env);
      const server = await startServer(config, options.role);
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
    .description('bring the database schema up to date')
    .action(async () => {
      const config = loadConfig(io.env);
      const storage = openStorage(config.databaseUrl, { log: createLogger(config, { write: io.err }), preparedStatements: config.databasePreparedStatements });
      try {
        io.out(`${JSON.stringify(await migrateToLatest(storage.db))}\n`);
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
      withDeps(io, async (deps) => {
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
      withDeps(io, async (deps) => {
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
      withDeps(io, async (deps) => {
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
      withDeps(io, async (deps) => {
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
      withDeps(io, async (deps) => {
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
      withDeps(io, async (deps) => {
        const ttlMs = parseConsoleTokenTtl(options.ttl, '--ttl');
        const publicUrl = options.baseUrl === undefined ? deps.config.publicUrl : baseUrlOption(options.baseUrl);
        // Only the service knows where it answers: a link built from defaults is a guess, and says so.
        if (options.baseUrl === undefined && !io.env.PUBLIC_URL) {
          io.err(`rewards: PUBLIC_URL is not set here, so the link assumes the service answers at ${publicUrl}; if it answers elsewhere, give --base-url or PUBLIC_URL as the service has it\n`);
        }
        return createConsoleLink({ ...deps, config: { publicUrl } }, await requireAccount(deps, options.account), ttlMs);
      }),
    );

  const keys = program.command('keys').description('manage token signing keys');
  keys
    .command('rotate')
    .description('sign new tokens with a new key; the previous key verifies until its tokens expire')
    .action(() =>
      withDeps(io, async (deps) => {
        const { kid } = await deps.keys.rotate(deps.config.tokenTtlMs);
        return { kid, previous_keys_valid_until: iso(deps.clock() + deps.config.tokenTtlMs) };
      }),
    );
  return program;
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
 * failure or a usage error, 2 for what the operator got wrong (a DomainError, a bad setting).
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
