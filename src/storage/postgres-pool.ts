import pg from 'pg';

/**
 * How long the service waits for PostgreSQL, at each place a call can hang (docs/deployment.md,
 * "Bounded waits on the database"). Every wait of a database call is bounded by one of these, so
 * that a primary lost in a failover, a network partition or a half-open socket ends in a fast 503
 * and a new connection, never in a request that hangs until the kernel gives up on the socket
 * (about 15 minutes with Linux's default retransmissions).
 */
export interface ConnectionBounds {
  /** DATABASE_CONNECT_TIMEOUT: opening a connection (TCP, TLS, authentication) until it is ready for queries. */
  connectTimeoutMs: number;
  /** DATABASE_POOL_TIMEOUT: waiting for a pooled connection when every one is busy (the pool's acquire). */
  poolTimeoutMs: number;
  /** DATABASE_STATEMENT_TIMEOUT: a statement sent without an answer for this long closes its connection (0 = no bound). */
  statementTimeoutMs: number;
  /** DATABASE_KEEPALIVE: TCP keepalive on every connection, probing after this much idle time (0 = off). */
  keepAliveMs: number;
  /** DATABASE_HEARTBEAT_TIMEOUT: the heartbeat's `select 1` unanswered this long means the server went silent (0 = no heartbeat). */
  heartbeatTimeoutMs: number;
}

export const DEFAULT_CONNECTION_BOUNDS: Readonly<ConnectionBounds> = Object.freeze({
  connectTimeoutMs: 5_000,
  poolTimeoutMs: 5_000,
  statementTimeoutMs: 30_000,
  keepAliveMs: 10_000,
  heartbeatTimeoutMs: 5_000,
});

/** How often the watchdog sends its heartbeat and looks for statements past their bound. */
const WATCHDOG_INTERVAL_MS = 1_000;

/** What the watchdog did, for the log and the metrics (the composition root listens). */
export type WatchdogEvent =
  /** `first`: the first unanswered heartbeat since the server last answered (the ones after it repeat the finding). */
  { kind: 'silent'; waitedMs: number; closed: number; first: boolean } | { kind: 'answering'; silentForMs: number } | { kind: 'statement-timeout'; waitedMs: number };

/**
 * A connection closed because the database did not answer on it in time. Its code is the socket's
 * own for a timed-out peer, so it counts as "the database cannot serve" (503, readiness).
 */
class DatabaseNotAnsweringError extends Error {
  readonly code = 'ETIMEDOUT';
  constructor(message: string) {
    super(message);
    this.name = 'DatabaseNotAnsweringError';
  }
}

/** What the watchdog knows of one pooled connection: statements in flight, and when the server last answered on it. */
interface Tracked {
  /** Statements sent and not yet answered. */
  pending: number;
  /** When the oldest statement still unanswered was sent. */
  sentAt: number;
  /** When the server last answered on this connection (its start counts). */
  heardAt: number;
}

type Socket = { destroy(error?: Error): void };

function closeConnection(client: pg.Client, error: Error): void {
  (client.connection as unknown as { stream?: Socket } | undefined)?.stream?.destroy(error);
}

/**
 * Resolves 'answered' when `work` resolves, 'failed' when it rejects (a refusal: the server, or
 * something in the way, said no), or 'silent' when it has not settled after `ms`. That verdict is
 * given one turn of the event loop later (setImmediate runs after the I/O poll): when this
 * process's own event loop was blocked past the deadline, an answer that arrived meanwhile is
 * read first, and a busy process does not take its own stall for the database's silence.
 */
function answeredWithin(work: Promise<unknown>, ms: number): Promise<'answered' | 'failed' | 'silent'> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => setImmediate(() => resolve('silent')), ms);
    work.then(
      () => (clearTimeout(timer), resolve('answered')),
      () => (clearTimeout(timer), resolve('failed')),
    );
  });
}

/**
 * Watches one pool's connections for a server that stopped answering:
 * - **statement bound**: a connection whose statement has waited DATABASE_STATEMENT_TIMEOUT for an
 *   answer is closed (its statement fails, the pool opens a new connection). It is the only bound
 *   on a connection that goes silent alone (a NAT or firewall that dropped its state): TCP would
 *   retransmit for about 15 minutes, and keepalive probes only idle sockets.
 * - **heartbeat**: every second, `select 1` on a connection of its own. Unanswered within
 *   DATABASE_HEARTBEAT_TIMEOUT, the server has gone silent (a host lost without closing its
 *   sockets, a partition, an address moved in a failover): every connection that has heard nothing
 *   from the server since that heartbeat was sent is closed at once, idle or busy, so that the
 *   statements waiting on them fail now, and new connections go to wherever the address leads.
 *   Statements may run long (DATABASE_STATEMENT_TIMEOUT) without being taken for silence: the
 *   heartbeat, not their age, tells a silent server from a slow statement.
 * Node cannot set TCP_USER_TIMEOUT; these two are its application-level equivalent, and they also
 * see through a proxy (HAProxy, PgBouncer) that keeps the service's side of a dead session open.
 */
class ConnectionWatchdog {
  readonly #tracked = new Map<pg.Client, Tracked>();
  readonly #timer: NodeJS.Timeout;
  #heartbeat: pg.Client | undefined;
  #beating = false;
  #silentSince: number | undefined;
  #suspended = 0;
  #stopped = false;

  constructor(
    private readonly config: pg.ClientConfig,
    private readonly bounds: ConnectionBounds,
    private readonly onEvent: (event: WatchdogEvent) => void,
  ) {
    this.#timer = setInterval(() => this.#tick(), WATCHDOG_INTERVAL_MS);
    this.#timer.unref();
  }

  /** Whether the last heartbeat was answered (true before the first, and without a heartbeat). */
  get answering(): boolean {
    return this.#silentSince === undefined;
  }

  /** Starts watching a new pooled connection: its statements are timed from now on. */
  track(client: pg.Client): void {
    const entry: Tracked = { pending: 0, sentAt: 0, heardAt: Date.now() };
    this.#tracked.set(client, entry);
    client.once('end', () => this.#tracked.delete(client));
    client.on('notification', () => (entry.heardAt = Date.now()));
    const answered = () => {
      entry.pending -= 1;
      entry.heardAt = Date.now();
      // pg sends one statement at a time: the next one queued goes out now.
      if (entry.pending > 0) entry.sentAt = entry.heardAt;
    };
    // eslint-disable-next-line @typescript-eslint/unbound-method -- pg's own query (or the prepared-statements wrapper), called below with the client as `this`.
    const query = client.query as (...args: unknown[]) => unknown;
    (client as { query: unknown }).query = function (this: unknown, ...args: unknown[]) {
      // A submittable (a cursor) keeps its own time: not timed.
      if (typeof (args[0] as { submit?: unknown } | null)?.submit === 'function') return query.apply(this, args);
      if (entry.pending++ === 0) entry.sentAt = Date.now();
      const callback = args[args.length - 1];
      if (typeof callback === 'function') {
        args[args.length - 1] = (...results: unknown[]) => {
          answered();
          (callback as (...results: unknown[]) => void)(...results);
        };
        return query.apply(this, args);
      }
      const result = query.apply(this, args) as Promise<unknown>;
      result.then(answered, answered);
      return result;
    };
  }

  /**
   * Runs `work` (migrations: an index build may take minutes) with no statement bound on this
   * pool meanwhile. Only for work that runs alone, before the process serves.
   */
  async withoutStatementBound<T>(work: () => Promise<T>): Promise<T> {
    this.#suspended += 1;
    try {
      return await work();
    } finally {
      this.#suspended -= 1;
    }
  }

  stop(): void {
    this.#stopped = true;
    clearInterval(this.#timer);
    void this.#heartbeat?.end().catch(() => {});
    this.#heartbeat = undefined;
  }

  #tick(): void {
    const now = Date.now();
    if (this.bounds.statementTimeoutMs > 0 && this.#suspended === 0) {
      for (const [client, entry] of this.#tracked) {
        const waited = now - entry.sentAt;
        if (entry.pending === 0 || waited < this.bounds.statementTimeoutMs) continue;
        this.#tracked.delete(client);
        closeConnection(client, new DatabaseNotAnsweringError(`no answer to a statement for ${Math.round(waited / 1000)} s (DATABASE_STATEMENT_TIMEOUT): connection closed`));
        this.onEvent({ kind: 'statement-timeout', waitedMs: waited });
      }
    }
    if (this.bounds.heartbeatTimeoutMs > 0 && !this.#beating) {
      this.#beating = true;
      void this.#beat().finally(() => (this.#beating = false));
    }
  }

  async #beat(): Promise<void> {
    let sentAt = Date.now();
    let verdict: 'answered' | 'failed' | 'silent' = 'answered';
    if (!this.#heartbeat) {
      // Opening the heartbeat's connection is bounded as any connection is (DATABASE_CONNECT_TIMEOUT):
      // a new session costs a fork and an authentication, slow on a loaded server that still answers.
      const client = new pg.Client({ ...this.config, connectionTimeoutMillis: 0 });
      client.on('error', () => {});
      this.#heartbeat = client;
      verdict = await answeredWithin(client.connect(), this.bounds.connectTimeoutMs);
      sentAt = Date.now();
    }
    // Stopped while the heartbeat's connection was being opened: `stop` has ended it, nothing is sent.
    if (this.#stopped || !this.#heartbeat) return;
    if (verdict === 'answered') verdict = await answeredWithin(this.#heartbeat.query('select 1'), this.bounds.heartbeatTimeoutMs);
    if (this.#stopped) return;
    if (verdict === 'answered') {
      if (this.#silentSince !== undefined) this.onEvent({ kind: 'answering', silentForMs: Date.now() - this.#silentSince });
      this.#silentSince = undefined;
      return;
    }
    // A refusal (connection refused, reset, shutting down) reaches the pool's connections by itself.
    const heartbeat = this.#heartbeat;
    this.#heartbeat = undefined;
    if (verdict === 'failed') return void heartbeat.end().catch(() => {});
    closeConnection(heartbeat, new DatabaseNotAnsweringError('heartbeat unanswered'));
    let closed = 0;
    for (const [client, entry] of this.#tracked) {
      if (entry.heardAt >= sentAt) continue;
      this.#tracked.delete(client);
      closeConnection(client, new DatabaseNotAnsweringError(`the database did not answer a heartbeat within ${this.bounds.heartbeatTimeoutMs} ms (DATABASE_HEARTBEAT_TIMEOUT): connection closed`));
      closed += 1;
    }
    const first = this.#silentSince === undefined;
    this.#silentSince ??= sentAt;
    this.onEvent({ kind: 'silent', waitedMs: Date.now() - sentAt, closed, first });
  }
}

export interface BoundedPool {
  pool: pg.Pool;
  /** Undefined when neither a statement bound nor a heartbeat is asked for. */
  watchdog: ConnectionWatchdog | undefined;
  end(): Promise<void>;
}

export interface BoundedPoolOptions {
  max: number;
  /** PostgreSQL schema (search_path) of every connection. */
  schema?: string | undefined;
  bounds?: Partial<ConnectionBounds>;
  /** Runs on every new connection (named prepared statements). */
  onConnect?: (client: pg.PoolClient) => void;
  /** What the watchdog did (closed silent connections, the server answering again). */
  onEvent?: (event: WatchdogEvent) => void;
}

/**
 * A pg pool whose every wait is bounded (ConnectionBounds) and that survives dropped connections.
 * A connection PostgreSQL drops (a restart, pg_terminate_backend, the watchdog) makes its client
 * emit 'error'. The pool listens only to idle clients; a client in use (a transaction between two
 * statements, the LISTEN connection) would have no listener, and an unhandled 'error' ends the
 * process. The statement in flight is rejected anyway, so the work that used the client fails and
 * is retried; the pool drops the dead client at its release.
 */
export function createBoundedPool(connectionString: string, options: BoundedPoolOptions): BoundedPool {
  const bounds = { ...DEFAULT_CONNECTION_BOUNDS, ...options.bounds };
  // pg's keepalive: Node sets the probes' interval (1 s) and count (10) itself.
  const client: pg.ClientConfig = {
    connectionString,
    connectionTimeoutMillis: bounds.connectTimeoutMs,
    ...(bounds.keepAliveMs > 0 ? { keepAlive: true, keepAliveInitialDelayMillis: bounds.keepAliveMs } : {}),
    ...(options.schema ? { options: `-c search_path=${options.schema}` } : {}),
  };
  // pg-pool hands its own options to each client it makes: its acquire bound (connectionTimeoutMillis)
  // would become the clients' connect bound. The pool's Client class keeps the two apart.
  class BoundedClient extends pg.Client {
    constructor() {
      super(client);
    }
  }
  const pool = new pg.Pool({ ...client, max: options.max, connectionTimeoutMillis: bounds.poolTimeoutMs, Client: BoundedClient });
  const watched = bounds.statementTimeoutMs > 0 || bounds.heartbeatTimeoutMs > 0;
  const watchdog = watched ? new ConnectionWatchdog(client, bounds, options.onEvent ?? (() => {})) : undefined;
  pool.on('error', () => {});
  pool.on('connect', (connection) => {
    connection.on('error', () => {});
    options.onConnect?.(connection);
    watchdog?.track(connection);
  });
  return {
    pool,
    watchdog,
    end: async () => {
      watchdog?.stop();
      await pool.end();
    },
  };
}
