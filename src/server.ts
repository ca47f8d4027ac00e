import type { TypedApp } from './http/typed-app.js';
import type { Config } from './config.js';
import { createDeps, type Deps } from './deps.js';
import { ensureOperator } from './services/operator-bootstrap.js';
import { startJobWorkerTask } from './worker/start-worker.js';
import { CONSOLE_BUILD_SCRIPT, CONSOLE_DIST_DIR, ensureConsoleBuilt } from './console-build.js';

export type Role = 'all' | 'api' | 'worker';

/** Background work started beside (or instead of) the API; issue-specific workers plug in here. */
interface BackgroundTask {
  stop(): Promise<void>;
}
type BackgroundStarter = (deps: Deps) => Promise<BackgroundTask>;

/** Workers started by `serve --role all|worker`, in order. */
const BACKGROUND_TASKS: BackgroundStarter[] = [startJobWorkerTask];

export interface RunningServer {
  deps: Deps;
  app: TypedApp | undefined;
  address: string | undefined;
  /** Graceful: stop accepting, finish in-flight requests and jobs, then close the database. */
  close(): Promise<void>;
}

export async function startServer(config: Config, role: Role = 'all'): Promise<RunningServer> {
  const deps = await createDeps(config, { tracing: true });
  // The API serves the web console; its files are built now when they are missing (docs/console.md).
  const consoleBuild = role !== 'worker' ? ensureConsoleBuilt({ dir: CONSOLE_DIST_DIR, script: CONSOLE_BUILD_SCRIPT, log: deps.log }) : undefined;
  // Imported by role: a worker process loads no API routes, schemas or documentation (memory).
  const app =
    role !== 'worker'
      ? await (await import('./app.js')).buildApp(deps, { console: { notBuiltDetail: consoleBuild?.notBuiltDetail } })
      : config.metricsPort !== undefined
        ? await (await import('./ops-app.js')).buildOpsApp(deps)
        : undefined;
  const operator = await ensureOperator(deps.db, config.dataDir, `${config.publicUrl}/v2/oauth/token`, { log: deps.log });
  if (operator.created) deps.log.info({ file: operator.credentialsFile }, 'created the operator account; its client credentials are in this file');

  let address: string | undefined;
  if (app) address = await app.listen({ port: role === 'worker' ? config.metricsPort! : config.port, host: config.host });
  const tasks: BackgroundTask[] = [];
  if (role !== 'api') for (const start of BACKGROUND_TASKS) tasks.push(await start(deps));

  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      consoleBuild?.stop();
      if (app) await app.close();
      for (const task of tasks.reverse()) await task.stop();
      await deps.close();
    })();
    return closing;
  };
  return { deps, app, address, close };
}
