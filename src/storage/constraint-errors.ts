/**
 * Recognises constraint violations from either driver, so a race that slips past a pre-check
 * (two creates with the same name at once) still becomes a 409 rather than a 500.
 * better-sqlite3 reports `code: 'SQLITE_CONSTRAINT_UNIQUE'`; pg reports SQLSTATE `23505`.
 */
export function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

/** A row is still referenced by another table (SQLite `SQLITE_CONSTRAINT_FOREIGNKEY`, pg `23503`). */
export function isForeignKeyViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '23503' || code === 'SQLITE_CONSTRAINT_FOREIGNKEY';
}
