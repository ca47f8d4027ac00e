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

/** SQLSTATE classes of a database that cannot serve right now: connection exception, insufficient resources (disk full, out of memory, too many connections), operator intervention (shutting down, starting up), system error. */
const UNAVAILABLE_SQLSTATE_CLASSES = new Set(['08', '53', '57', '58']);
/** And single SQLSTATEs: 25006 read_only_sql_transaction (a primary demoted in a failover, a standby, `default_transaction_read_only`). */
const UNAVAILABLE_SQLSTATES = new Set(['25006']);
/** SQLite's answers when the file cannot be written or read just now (disk full, I/O error, locked past busy_timeout). */
const UNAVAILABLE_SQLITE_CODES = /^SQLITE_(FULL|IOERR|BUSY|LOCKED|CANTOPEN|READONLY|NOMEM|PROTOCOL)/;
/** Socket errors and the pg client's own wording for a connection that went away. */
const UNAVAILABLE_NODE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH']);
const UNAVAILABLE_MESSAGES = /Connection terminated|connection error|Client was closed|timeout exceeded when trying to connect|^timeout expired$/i;

/**
 * The database cannot serve right now (PostgreSQL down or restarting, SQLite's disk full …): the
 * request may succeed later, so the API answers 503 with Retry-After instead of a 500. Nothing was
 * committed: every write of a request happens in one transaction.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (error instanceof AggregateError) return error.errors.some(isDatabaseUnavailable);
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (typeof code === 'string') {
    if (/^[0-9A-Z]{5}$/.test(code) && (UNAVAILABLE_SQLSTATE_CLASSES.has(code.slice(0, 2)) || UNAVAILABLE_SQLSTATES.has(code))) return true;
    if (UNAVAILABLE_SQLITE_CODES.test(code) || UNAVAILABLE_NODE_CODES.has(code)) return true;
  }
  return typeof message === 'string' && UNAVAILABLE_MESSAGES.test(message);
}

/** What each kind of failure is called, by SQLite code prefix or SQLSTATE (class). */
const FAILURE_KINDS: Array<[RegExp, string]> = [
  [/^(SQLITE_FULL|53100$)/, "the database's disk is full"],
  [/^(SQLITE_READONLY|25006$)/, 'the database is read-only'],
  [/^(SQLITE_IOERR|58)/, "the database's storage fails"],
  [/^(SQLITE_BUSY|SQLITE_LOCKED|55P03$)/, 'the database is locked'],
  [/^(SQLITE_NOMEM|53)/, 'the database is out of resources'],
  [/^(08|57|E[A-Z]+$)/, 'the database is unreachable'],
];

/**
 * Why a write failed, in words safe to show anyone (readiness is public): a kind and the error's
 * code, never its message (it may name hosts, files or statements).
 */
export function databaseFailureReason(error: unknown): string {
  if (error instanceof AggregateError) return databaseFailureReason(error.errors[0]);
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return isDatabaseUnavailable(error) ? 'the database is unreachable' : 'the database refused the write';
  const kind = FAILURE_KINDS.find(([pattern]) => pattern.test(code))?.[1] ?? 'the database refused the write';
  return `${kind} (${/^[0-9A-Z]{5}$/.test(code) ? `SQLSTATE ${code}` : code})`;
}
