import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import { loadSettings } from '../config-file.js';
import { secretKeyFile } from '../deps.js';
import { invalid } from '../domain/errors.js';
import { backupSqliteDatabase } from '../storage/sqlite-backup.js';
import { requireExistingDatabase } from './existing-database.js';
import type { EffectiveSettings } from './listen.js';

/** Where the command reads its settings and writes its lines (program.ts's CliIo). */
interface CliIo {
  env: Record<string, string | undefined>;
  out(text: string): void;
  err(text: string): void;
}

const POSTGRES_DOCS = 'docs/deployment.md, "Backups and restore", its PostgreSQL part';

/**
 * `rewards backup FILE`: the embedded SQLite database copied online, while the service runs
 * (storage/sqlite-backup.ts says how and why). PostgreSQL is backed up with PostgreSQL's own
 * tools, which the docs describe; the command refuses it.
 */
export function addBackupCommand(program: Command, io: CliIo, effective: EffectiveSettings): void {
  program
    .command('backup')
    .description(`copy the embedded SQLite database to FILE (0600) while the service runs, checked with PRAGMA integrity_check; PostgreSQL: pg_basebackup and WAL archiving (${POSTGRES_DOCS})`)
    .argument('<file>', 'the backup to write')
    .option('--force', 'replace FILE if it exists')
    .action(async (file: string, options: { force?: boolean }) => {
      // Before the whole configuration is read: with PostgreSQL it would first ask for SECRET_KEY, which a refusal does not need.
      const databaseUrl = loadSettings({ configFile: program.opts<{ config?: string }>().config, env: io.env }).env.DATABASE_URL?.trim();
      if (databaseUrl && !databaseUrl.startsWith('sqlite:')) {
        throw invalid(`rewards backup copies the embedded SQLite database, and DATABASE_URL names a PostgreSQL database: back it up with pg_basebackup and WAL archiving (${POSTGRES_DOCS})`);
      }
      const { config, settings } = effective();
      await requireExistingDatabase(config, settings);
      const report = await backupSqliteDatabase(config.databaseUrl.slice('sqlite:'.length), file, { force: options.force === true, busyTimeoutMs: config.databaseBounds.poolTimeoutMs });
      if (config.secretKey === undefined && existsSync(secretKeyFile(config))) {
        io.err(`rewards: the backup holds the database, not its SECRET_KEY: the stored secrets in it open only with the key in ${secretKeyFile(config)}. Keep a copy of that file with the backups.\n`);
      }
      io.out(`${JSON.stringify(report)}\n`);
    });
}
