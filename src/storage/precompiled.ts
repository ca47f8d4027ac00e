import { CompiledQuery, type Compilable, type RawBuilder } from 'kysely';
import type { Db, Executor } from './database.js';
import { prepareStatement } from './prepared-statements.js';

/** Stands for the i-th argument while the query is built; never reaches the database. */
const placeholder = (index: number) => `\u0000precompiled-parameter-${index}\u0000`;

/**
 * A hot-path query built and compiled once per SQL dialect, then run with new arguments.
 *
 * Building and compiling a Kysely query costs more than SQLite then takes to run the prepared
 * statement, so on a hot path (the token endpoint's client lookup is one) it is done once.
 * `build` receives placeholder strings instead of the real arguments, so it must use each
 * argument as a plain value: no `in` lists of variable length, no branching on it. It may ask the dialect
 * (`dialectOf(db)`: it runs once per dialect) and return raw `sql` as well as a query builder.
 */
export function precompiled<Args extends unknown[], Row>(build: (db: Db, ...args: { [K in keyof Args]: string }) => Compilable<Row> | RawBuilder<Row>) {
  const byDialect = new Map<unknown, { sql: string; slots: Array<{ argument: number } | { value: unknown }> }>();
  return async (db: Executor, ...args: Args): Promise<Row[]> => {
    const adapter = db.getExecutor().adapter.constructor;
    let compiled = byDialect.get(adapter);
    if (!compiled) {
      const placeholders = args.map((_, index) => placeholder(index)) as { [K in keyof Args]: string };
      // A query builder's compile() takes no argument, a raw builder's takes the database.
      const query = (build(db, ...placeholders) as { compile(executorProvider: Executor): CompiledQuery<Row> }).compile(db);
      const slots = query.parameters.map((value) => {
        const argument = placeholders.indexOf(value as string);
        return argument >= 0 ? { argument } : { value };
      });
      const used = new Set(slots.flatMap((slot) => ('argument' in slot ? [slot.argument] : [])));
      if (used.size !== args.length) throw new Error(`precompiled query uses ${used.size} of its ${args.length} arguments: ${query.sql}`);
      compiled = { sql: query.sql, slots };
      byDialect.set(adapter, compiled);
      // Its text is fixed: on PostgreSQL it runs as a named prepared statement (prepared-statements.ts).
      prepareStatement(query.sql);
    }
    const parameters = compiled.slots.map((slot) => ('argument' in slot ? args[slot.argument] : slot.value));
    const result = await db.executeQuery<Row>(CompiledQuery.raw(compiled.sql, parameters));
    return result.rows;
  };
}
