import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';

/**
 * The SQLite driver for the running Node.js line: the one place that knows there are two.
 *
 * - better-sqlite3 13 is built on Node-API 10 and ships prebuilt binaries in its npm package, so
 *   one install loads on every line that has Node-API 10 (Node 22.14+, 24, later). On Node 20
 *   (Node-API 9) it crashes with SIGSEGV.
 * - better-sqlite3 12 (installed as `better-sqlite3-node20`) is compiled at install time against
 *   the running Node's ABI. It works on Node 20 and 22, but on Node 24 it aborts the process the
 *   first time the garbage collector frees a prepared statement outside a JavaScript context:
 *   Node 24's `node::ObjectWrap` destructor calls `RemoveEnvironmentCleanupHook`, which finds no
 *   environment there (`Assertion failed: (env) != nullptr`, from `Statement::~Statement`).
 *   13 moved to node-addon-api and is not affected.
 *
 * So: 13 wherever Node-API 10 exists, 12 elsewhere. When the supported floor moves to Node 22,
 * delete the `better-sqlite3-node20` alias and this choice (docs/deployment.md, "Node.js lines").
 * 13 stays on 13.0.x: 13.1's SQLite 3.54 compiles most of our statements again on every run,
 * which would make recompiling the main cost of a cheap read; the same section says why.
 */
export type SqliteDatabase = BetterSqlite3.Database;
type SqliteConstructor = typeof BetterSqlite3;

const require = createRequire(import.meta.url);

/** The package this runtime loads: `better-sqlite3` (13) with Node-API ≥ 10, else the Node 20 build of 12. */
export const SQLITE_PACKAGE = Number(process.versions.napi) >= 10 ? 'better-sqlite3' : 'better-sqlite3-node20';

/** Opens a SQLite database file (or `:memory:`) with this line's driver (require caches the module). */
export function openSqliteDatabase(path: string, options?: BetterSqlite3.Options): SqliteDatabase {
  let Driver: SqliteConstructor;
  try {
    Driver = require(SQLITE_PACKAGE) as SqliteConstructor;
  } catch (error) {
    throw new Error(
      `Cannot load ${SQLITE_PACKAGE}, the SQLite driver for Node.js ${process.version} ` +
        `(${(error as Error).message.split('\n')[0]}). Run \`npm ci\` (or \`npm rebuild ${SQLITE_PACKAGE}\`) with this Node.js.`,
      { cause: error },
    );
  }
  return new Driver(path, options);
}
