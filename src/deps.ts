import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import type { Config } from './config.js';
import type { Db } from './storage/database.js';
import type { StorageDialect } from './storage/dialect.js';
import { JobSignals } from './storage/queue/index.js';
import { RequestIngestWriter } from './storage/request-ingest-writer.js';
import { ClientCache } from './storage/client-cache.js';
import { TokenRevocations } from './services/token-revocations.js';
import { CONSOLE_TOKEN_MAX_TTL_MS } from './services/console-links.js';
import { SecretBox } from './domain/crypto/secret-box.js';
import { AccessTokens } from './services/access-tokens.js';
import { FailureLimiter, TOKEN_FAILURE_LIMITS } from './domain/tokens/failure-limiter.js';
import { KeyStore } from './services/key-store.js';
import { DatabaseReadiness } from './services/database-readiness.js';
import type { Logger } from './logger.js';
import { openStorage, type Storage, type StorageOptions } from './storage/database.js';
import type { WatchdogEvent } from './storage/postgres-pool.js';
import { ensurePrivateDirectory, restrictFile, type FileModeLog } from './storage/private-files.js';
import { ensureLogPartitions, logPeriodMs } from './storage/log-partitions.js';
import { finishPartitionedIndexes, migrateToLatest } from './storage/migrations/index.js';
import { createMetrics, type Metrics } from './metrics.js';
import { Liveness } from './liveness.js';
import type { OutboundDelivery } from './worker/outbound/outbound-config.js';
import { createThreadedOutbound } from './worker/outbound/threaded-outbound.js';
import { startTracing, type Tracing } from './tracing.js';

/** Everything a route may use, built once in the composition root (deps.ts). */
export interface AppDeps {
  config: Config;
  db: Db;
  /** The replica of DATABASE_READ_URL for the reads that may lag (services/replica-reads.ts), else `db`. */
  readDb: Db;
  /** Whether that replica answers its heartbeat (true without one). */
  replicaAnswering: () => boolean;
  dialect: StorageDialect;
  box: SecretBox;
  keys: KeyStore;
  tokens: AccessTokens;
  failures: FailureLimiter;
  clock: () => number;
  log: Logger;
  metrics: Metrics;
  /** Wakes this process's job worker after a commit that enqueued jobs. */
  signals: JobSignals;
  /** The group commit of accepted reward requests (POST /requests). */
  ingest: RequestIngestWriter;
  /** The token endpoint's client rows (1 s); the admin routes forget them after a change. */
  clientCache: ClientCache;
  /** Tokens that verify but are refused: their account, client or console link was cut (AUTH_REFRESH_INTERVAL). */
  revocations: TokenRevocations;
  /** /health/ready: the database takes writes (a probe, and the refusals the API and worker meet). */
  readiness: DatabaseReadiness;
  /** /health/live: the ingest commits and the worker's loops make progress (LIVENESS_TIMEOUT). */
  liveness: Liveness;
  /** Traces (OTEL_EXPORTER_OTLP_ENDPOINT; tracing.ts): undefined while off, as by default. */
  tracing: Tracing | undefined;
}

export interface Deps extends AppDeps {
  storage: Storage;
  /** Outbound notification delivery (HTTP client, OAuth2 token cache, concurrency limits). */
  outbound: OutboundDelivery;
  close(): Promise<void>;
}

export interface CreateDepsOptions extends StorageOptions {
  clock?: () => number;
  log?: Logger;
  /** Run migrations and make sure a signing key exists (default true). */
  prepare?: boolean;
  /** SQLite without SECRET_KEY: generate DATA_DIR/secret.key when it is missing (default true; the operator's commands never do). */
  generateSecretKey?: boolean;
  /** Export traces if the OTEL_* settings ask for it (`rewards serve`); default false: the operator's one-shot commands make no spans. */
  tracing?: boolean;
}

/** The SQLite database's generated key, when SECRET_KEY is not set. */
export function secretKeyFile(config: Config): string {
  return join(config.dataDir, 'secret.key');
}

/** SECRET_KEY from the environment, or for SQLite generated once into DATA_DIR/secret.key (0600) unless `generate` is false. */
function resolveSecretKey(config: Config, log?: FileModeLog, options: { generate?: boolean } = {}): string {
  if (config.secretKey) return config.secretKey;
  if (!config.databaseUrl.startsWith('sqlite:')) throw new Error('SECRET_KEY is required with PostgreSQL');
  const file = secretKeyFile(config);
  if (options.generate === false && !existsSync(file)) throw new Error(`SECRET_KEY is not set and there is no key file at ${file}`);
  ensurePrivateDirectory(config.dataDir, log);
  if (existsSync(file)) {
    restrictFile(file, log);
    return readFileSync(file, 'utf8').trim();
  }
  const key = randomBytes(32).toString('base64');
  writeFileSync(file, `${key}\n`, { mode: 0o600, flag: 'wx' });
  chmodSync(file, 0o600);
  return key;
}

/** The service's logger: JSON lines (pino) on stdout, or on `destination` (the CLI's commands write theirs to stderr, their output being JSON on stdout). */
export function createLogger(config: Config, destination?: { write(line: string): void }): Logger {
  const options = { level: config.logLevel, redact: { paths: ['req.headers.authorization', '*.client_secret', '*.clientSecret', '*.secret'], censor: '[redacted]' } };
  return destination ? pino(options, destination) : pino(options);
}

/** The watchdogs' findings, one line each: a silent database is a warning, its return and a statement past its bound too. */
function reportWatchdogEvent(log: Logger, event: WatchdogEvent & { pool: string }): void {
  if (event.kind === 'silent')
    log[event.first ? 'warn' : 'debug'](
      { pool: event.pool, waitedMs: event.waitedMs, closed: event.closed },
      'the database did not answer a heartbeat (DATABASE_HEARTBEAT_TIMEOUT): its connections that heard nothing since are closed, new ones are opened as needed',
    );
  else if (event.kind === 'answering') log.info({ pool: event.pool, silentForMs: event.silentForMs }, 'the database answers again');
  else log.warn({ pool: event.pool, waitedMs: event.waitedMs }, 'a statement had no answer within DATABASE_STATEMENT_TIMEOUT: its connection is closed');
}

/** The composition root: every long-lived dependency is built here and nowhere else. */
export async function createDeps(config: Config, options: CreateDepsOptions = {}): Promise<Deps> {
  const clock = options.clock ?? Date.now;
  const log = options.log ?? createLogger(config);
  // Set once the metrics exist (they read the storage): the watchdogs report from the start.
  let metrics: Metrics | undefined;
  let tracing: Tracing | undefined;
  const storage = openStorage(config.databaseUrl, {
    ...(config.databaseListenUrl ? { listenUrl: config.databaseListenUrl } : {}),
    ...(config.databaseReadUrl ? { readUrl: config.databaseReadUrl } : {}),
    preparedStatements: config.databasePreparedStatements,
    bounds: config.databaseBounds,
    onWatchdogEvent: (event) => {
      reportWatchdogEvent(log, event);
      if (event.kind !== 'answering') metrics?.databaseConnectionsClosed.inc({ pool: event.pool, reason: event.kind }, event.kind === 'silent' ? event.closed : 1);
    },
    ...options,
    log,
  });
  try {
    const box = new SecretBox(resolveSecretKey(config, log, { generate: options.generateSecretKey !== false }), config.secretKeyPrevious);
    if (options.prepare !== false) {
      // Migrations may build indexes for minutes: no statement bound while they run (before anything is served).
      await storage.withoutStatementBound(async () => {
        await migrateToLatest(storage.db);
        // The delivery log's indexes a migration left to be built concurrently (partitioned-indexes.ts).
        const built = await finishPartitionedIndexes(storage.db as never, { log: (message, error) => log.warn({ err: error }, message) });
        if (built.length > 0) log.info({ indexes: built }, 'delivery log indexes built');
      });
      // The delivery log's partitions for now and the next period (PostgreSQL); the worker keeps
      // them ahead. Not a reason to refuse to start: without them notifications go to the default
      // partition, and the worker tries again.
      await ensureLogPartitions(storage.db, { now: clock(), periodMs: logPeriodMs(config.notificationRetentionMs) }).catch((error: unknown) =>
        log.warn({ err: error }, 'making the delivery log partitions failed; the worker tries again'),
      );
    }
    // Off, nothing is imported: the OpenTelemetry SDK is loaded only when an endpoint is set.
    tracing = options.tracing ? await startTracing(config.tracing, log) : undefined;
    const keys = new KeyStore(storage.db, box, clock);
    if (options.prepare !== false) await keys.ensureSigningKey();
    const tokens = new AccessTokens(keys, config.publicUrl, config.tokenTtlMs, clock);
    // Failed authentications per (client id, address) and per address, then 429 (docs/tokens.md).
    const failures = new FailureLimiter(TOKEN_FAILURE_LIMITS, clock);
    const outbound = createThreadedOutbound(config, { log });
    const signals = new JobSignals();
    const ingest = new RequestIngestWriter(storage.db, signals, { clock });
    const clientCache = new ClientCache(storage.db);
    const revocations = new TokenRevocations(storage.db, {
      refreshIntervalMs: config.authRefreshIntervalMs,
      tokenLifetimeMs: Math.max(config.tokenTtlMs, CONSOLE_TOKEN_MAX_TTL_MS),
      clock,
      log,
    });
    const readiness = new DatabaseReadiness({ db: storage.db, sqliteFile: storage.file, clock, log });
    metrics = createMetrics(storage, clock, { dataDir: config.dataDir, readiness });
    const liveness = new Liveness(config.livenessTimeoutMs);
    liveness.watch('the ingest of reward requests', () => ingest.busySince());
    return {
      config,
      log,
      storage,
      db: storage.db,
      readDb: storage.readDb,
      replicaAnswering: () => storage.replicaAnswering(),
      dialect: storage.dialect,
      box,
      keys,
      tokens,
      failures,
      clock,
      metrics,
      signals,
      ingest,
      clientCache,
      revocations,
      readiness,
      liveness,
      outbound,
      tracing,
      close: async () => {
        await revocations.close();
        await ingest.flush();
        await outbound.close();
        await tracing?.shutdown();
        await storage.close();
      },
    };
  } catch (error) {
    await tracing?.shutdown();
    await storage.close();
    throw error;
  }
}
