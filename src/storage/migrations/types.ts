import { PostgresAdapter, type Kysely } from 'kysely';

/** Column type for epoch-millisecond timestamps: SQLite's integer is already 64-bit. */
export function epochMs(db: Kysely<unknown>): 'bigint' | 'integer' {
  return isPostgres(db) ? 'bigint' : 'integer';
}

export function isPostgres(db: Kysely<unknown>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}
