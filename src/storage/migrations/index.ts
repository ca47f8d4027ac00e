import { Migrator, type Kysely, type Migration, type MigrationProvider } from 'kysely';
import * as m001 from './001_accounts_clients_keys.js';
import * as m003 from './003_experiences.js';

/**
 * Every migration, registered explicitly and in order. A new migration is a new file here,
 * never an edit of a released one.
 */
const MIGRATIONS: Record<string, Migration> = {
  '001_accounts_clients_keys': m001,
  '003_experiences': m003,
};

const provider: MigrationProvider = { getMigrations: async () => MIGRATIONS };

export interface MigrationReport {
  applied: string[];
}

/** Brings the schema up to date. Safe to run concurrently from several processes (Kysely locks). */
export async function migrateToLatest(db: Kysely<any>): Promise<MigrationReport> {
  const migrator = new Migrator({ db, provider });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return { applied: (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName) };
}
