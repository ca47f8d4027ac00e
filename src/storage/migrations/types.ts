import type { Kysely } from 'kysely';
import { dialectOf } from '../dialect.js';

/** Column type for epoch-millisecond timestamps: SQLite's integer is already 64-bit. */
export function epochMs(db: Kysely<unknown>): 'bigint' | 'integer' {
  return dialectOf(db).epochMs;
}
