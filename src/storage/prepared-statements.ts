import { createHash } from 'node:crypto';
import type pg from 'pg';

/**
 * Named prepared statements for the hot statements on PostgreSQL: each connection parses and plans
 * such a statement once, then only binds and runs it. `pg` otherwise sends every query as an
 * unnamed statement, planned anew each time, and on the partitioned delivery log (log-partitions.ts)
 * that planning is most of a claim's cost: the planner weighs every partition's indexes. Measured
 * by `npm run bench -- --only statements` (docs/benchmarks.md); graphile-worker does the same for
 * its queries.
 *
 * Which statements: those whose SQL text is fixed (`precompiled` ones, the plain claim) and says
 * which columns it returns. A `*` is expanded when the statement is prepared, and once a migration
 * adds a column PostgreSQL refuses to run the prepared statement again ("cached plan must not change
 * result type"): such texts are left unnamed. Each connection keeps at most one prepared statement
 * per registered text, a few dozen.
 *
 * Behind a pooler in transaction mode before PgBouncer 1.21 a prepared statement may be asked of
 * another server connection than the one that prepared it: DATABASE_PREPARED_STATEMENTS=off
 * (docs/deployment.md, "Behind a connection pooler").
 */

const names = new Map<string, string>();

/** A column wildcard in a select list or a `returning`: `*`, `t.*`, `"t".*` (not `count(*)`). */
const WILDCARD = /(?:\bselect|\breturning|,)\s+(?:(?:"[^"]+"|\w+)\.)?\*/i;

/** Registers `text` as a statement to prepare, unless it returns `*`. Returns whether it will be. */
export function prepareStatement(text: string): boolean {
  if (names.has(text)) return true;
  if (WILDCARD.test(text)) return false;
  names.set(text, `rw_${createHash('sha1').update(text).digest('hex').slice(0, 24)}`);
  return true;
}

/** The name `text` is prepared under, if it is registered. */
export function preparedStatementName(text: string): string | undefined {
  return names.get(text);
}

/** Makes `client` run the registered statements as named prepared statements (the others as before). */
export function usePreparedStatements(client: pg.Client | pg.PoolClient): void {
  // eslint-disable-next-line @typescript-eslint/unbound-method -- pg's own query, called below with the client as `this`.
  const query = client.query as (...args: unknown[]) => unknown;
  (client as { query: unknown }).query = function (this: unknown, config: unknown, values?: unknown, callback?: unknown) {
    if (typeof config === 'string' && Array.isArray(values)) {
      const name = names.get(config);
      if (name) return query.call(this, { name, text: config, values }, callback);
    }
    return query.call(this, config, values, callback);
  };
}
