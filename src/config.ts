import { isIP } from 'node:net';
import { resolve } from 'node:path';
import { DEFAULT_CONNECTION_BOUNDS, type ConnectionBounds } from './storage/postgres-pool.js';
import { DEFAULT_CIRCUIT_SETTINGS, type CircuitSettings } from './domain/notifications/circuit-breaker.js';

/**
 * TRUST_PROXY: whose X-Forwarded-For the service believes when it decides the caller's address
 * (src/http/client-address.ts). `none`: nobody's, the address is the socket's peer. `all`: every
 * peer's, the caller is the first address of the header. `hops`: that many proxies in front of
 * the service. `addresses`: peers in these addresses or blocks (CIDR) are proxies.
 */
export type TrustProxy = { kind: 'none' } | { kind: 'all' } | { kind: 'hops'; hops: number } | { kind: 'addresses'; addresses: string[] };

/**
 * OUTBOUND_PROXY: the egress proxy every callback call and OAuth2 token request goes through, by
 * HTTP CONNECT (src/worker/outbound/proxy-connector.ts). `host` is a name or an IP address (IPv6
 * without brackets); `username` and `password` (decoded) make its `Proxy-Authorization: Basic`.
 */
export interface OutboundProxy {
  host: string;
  port: number;
  username?: string;
  password?: string;
}

/** OTEL_TRACES_SAMPLER: the OpenTelemetry SDK's samplers, by their standard names. */
const TRACE_SAMPLERS = ['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'] as const;
type TraceSampler = (typeof TRACE_SAMPLERS)[number];

/**
 * Traces over OTLP (docs/deployment.md, "Traces"), read from OpenTelemetry's standard variables.
 * On when an endpoint is set (`tracesUrl`); off, the service loads no OpenTelemetry SDK (tracing.ts).
 */
export interface TracingConfig {
  /** OTEL_EXPORTER_OTLP_ENDPOINT: the collector's base URL; spans go to its `v1/traces`. */
  endpoint: string | undefined;
  /** OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: the URL spans are POSTed to, as given (wins over the base URL). */
  tracesEndpoint: string | undefined;
  /** OTEL_EXPORTER_OTLP_PROTOCOL: `http/protobuf` (the standard's default) or `http/json`. */
  protocol: 'http/protobuf' | 'http/json';
  /** OTEL_EXPORTER_OTLP_HEADERS: sent with every export (a collector's API key), never logged or shown. */
  headers: Record<string, string>;
  /** OTEL_SERVICE_NAME: the resource's `service.name`. */
  serviceName: string;
  /** OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG (the ratio of the `traceidratio` samplers). */
  sampler: TraceSampler;
  samplerRatio: number;
  /** OTEL_SDK_DISABLED: off whatever the endpoint. */
  disabled: boolean;
}

/** Where the spans are sent, or undefined when traces are off (no endpoint, or OTEL_SDK_DISABLED). */
export function tracesUrl(tracing: TracingConfig): string | undefined {
  if (tracing.disabled) return undefined;
  if (tracing.tracesEndpoint !== undefined) return tracing.tracesEndpoint;
  // The standard's rule for the base URL: the signal's path appended after exactly one slash.
  return tracing.endpoint === undefined ? undefined : `${tracing.endpoint.replace(/\/*$/, '')}/v1/traces`;
}

/** Validated, frozen runtime configuration read from the environment (PRODUCT.md §2). */
export interface Config {
  port: number;
  host: string;
  databaseUrl: string;
  /** DATABASE_LISTEN_URL: undefined (LISTEN through DATABASE_URL), a direct postgres:// URL, or 'off' (poll). */
  databaseListenUrl: string | undefined;
  /** DATABASE_PREPARED_STATEMENTS: the hot statements as named prepared statements (PostgreSQL; off behind a pooler in transaction mode before PgBouncer 1.21). */
  databasePreparedStatements: boolean;
  /** DATABASE_READ_URL: a replica for the delivery log's reads (PostgreSQL); undefined: they go to DATABASE_URL. */
  databaseReadUrl: string | undefined;
  /** DATABASE_CONNECT_TIMEOUT, DATABASE_POOL_TIMEOUT, DATABASE_STATEMENT_TIMEOUT, DATABASE_KEEPALIVE, DATABASE_HEARTBEAT_TIMEOUT: every wait for the database bounded (storage/postgres-pool.ts). */
  databaseBounds: ConnectionBounds;
  /** LIVENESS_TIMEOUT: a worker loop's step or an ingest commit running longer than this makes /health/live answer 503. */
  livenessTimeoutMs: number;
  /** Directory for the embedded database, the generated secret key and operator credentials. */
  dataDir: string;
  publicUrl: string;
  tokenTtlMs: number;
  /** Base64 of 32 bytes, or undefined when it must be generated (SQLite only). */
  secretKey: string | undefined;
  /** SECRET_KEY_PREVIOUS: keys that still decrypt what they sealed (a key rotation, docs/deployment.md). */
  secretKeyPrevious: string[];
  retryMaxAttempts: number;
  retryIntervalMs: number;
  /** SUBSCRIPTION_DISABLE_AFTER: a subscription whose every attempt failed this long is switched off; 0 = never. */
  /** CIRCUIT_BREAKER_FAILURES (0 = off), CIRCUIT_BREAKER_PROBE_INTERVAL, CIRCUIT_BREAKER_PROBE_MAX_INTERVAL: the endpoint circuit breaker (docs/delivery.md, "Circuit breaker"). */
  circuitBreaker: CircuitSettings;
  subscriptionDisableAfterMs: number;
  /** NOTIFICATION_RETENTION: ended notifications (and their attempts) older than this are deleted by the worker; 0 = kept for ever. */
  notificationRetentionMs: number;
  callbackTimeoutMs: number;
  callbackAllowPrivateNetworks: boolean;
  mtlsCertFile: string | undefined;
  mtlsKeyFile: string | undefined;
  mtlsCaFile: string | undefined;
  /** OUTBOUND_PROXY: callbacks and their token requests leave through this HTTP proxy (CONNECT to the vetted address); undefined: directly. */
  outboundProxy: OutboundProxy | undefined;
  /** OUTBOUND_PROXY_BYPASS: destinations reached directly despite OUTBOUND_PROXY: `host.name`, `.domain` (its subdomains), IP addresses and CIDR blocks. */
  outboundProxyBypass: string[];
  /** OUTBOUND_SOURCE_ADDRESSES: the addresses (or CIDR blocks) calls come from, for receivers' firewalls (GET /delivery-policy); empty: not published. */
  outboundSourceAddresses: string[];
  logLevel: string;
  /** JOB_LEASE: how long a claimed job stays reserved for its worker; a crashed worker's jobs are retaken after it. */
  jobLeaseMs: number;
  /** METRICS_PORT: a `--role worker` process serves /metrics and /health/* there (unset: none). */
  metricsPort: number | undefined;
  /** AUTH_REFRESH_INTERVAL: how often an API process re-reads the token revocations (deactivations made by other processes apply within it). */
  authRefreshIntervalMs: number;
  /** TRUST_PROXY: which peers' X-Forwarded-For decides the caller's address (token endpoint limits, logs). */
  trustProxy: TrustProxy;
  /** HTTP_REQUEST_TIMEOUT: a request (headers and body) not received in full within it is answered 408 and its connection closed. */
  httpRequestTimeoutMs: number;
  /** HTTP_HEADERS_TIMEOUT: the same for the request's headers (and for a connection that sends nothing). */
  httpHeadersTimeoutMs: number;
  /** HTTP_MAX_CONNECTIONS: open connections to the API, in all; more are closed at once. */
  httpMaxConnections: number;
  /** HTTP_MAX_CONNECTIONS_PER_ADDRESS: open connections from one peer address (not a trusted proxy); 0 = no cap. */
  httpMaxConnectionsPerAddress: number;
  /** The OTEL_* variables: traces of each reward request, exported over OTLP when an endpoint is set. */
  tracing: TracingConfig;
}

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** Parses `200ms`, `10s`, `5m`, `3h`, `1d` into milliseconds. A unit is required. */
export function parseDuration(text: string): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$/.exec(text);
  if (!match) throw new Error(`expected a number with a unit (ms, s, m, h, d), e.g. "10s"; got "${text}"`);
  return Math.round(Number(match[1]) * DURATION_UNITS[match[2]!]!);
}

/** `false`, `true`, a number of proxy hops, or a comma-separated list of proxy addresses and CIDR blocks. */
/** The service's address as its callers reach it (PUBLIC_URL): an http(s) URL, without a trailing slash. */
export function parsePublicUrl(raw: string): string {
  const url = new URL(raw);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('expected an http(s) URL');
  return raw.replace(/\/+$/, '');
}

export function parseTrustProxy(text: string): TrustProxy {
  const raw = text.trim();
  if (/^false$/i.test(raw)) return { kind: 'none' };
  if (/^true$/i.test(raw)) return { kind: 'all' };
  if (/^\d+$/.test(raw)) {
    const hops = Number(raw);
    if (hops > 16) throw new Error(`expected at most 16 proxy hops, got ${hops}`);
    return hops === 0 ? { kind: 'none' } : { kind: 'hops', hops };
  }
  const addresses = raw
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  for (const entry of addresses) {
    const [address = '', prefix, extra] = entry.split('/');
    const family = isIP(address);
    const bits = family === 4 ? 32 : 128;
    if (family === 0 || extra !== undefined || (prefix !== undefined && (!/^\d+$/.test(prefix) || Number(prefix) > bits))) {
      throw new Error(`expected false, true, a number of proxy hops, or comma-separated proxy addresses or CIDR blocks (10.0.0.0/8, fd00::/8); "${entry}" is none of them`);
    }
  }
  if (addresses.length === 0) throw new Error('expected false, true, a number of proxy hops, or proxy addresses');
  return { kind: 'addresses', addresses };
}

/** An IP address or a CIDR block (`203.0.113.7`, `10.0.0.0/8`, `2001:db8::/32`), or undefined when `entry` is neither. */
function addressOrBlock(entry: string): string | undefined {
  const [address = '', prefix, extra] = entry.split('/');
  const family = isIP(address);
  if (family === 0 || extra !== undefined) return undefined;
  if (prefix !== undefined && (!/^\d+$/.test(prefix) || Number(prefix) > (family === 4 ? 32 : 128))) return undefined;
  return entry;
}

const commaSeparated = (raw: string) =>
  raw
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');

/**
 * OUTBOUND_PROXY: `http://[user:password@]host:port`, the port written out. Only HTTP proxies
 * (CONNECT): an `https://` or `socks5://` proxy is refused by name (docs/delivery.md, "Egress proxy").
 */
function parseOutboundProxy(raw: string): OutboundProxy {
  const expected = 'expected http://[user:password@]host:port (an HTTP proxy that accepts CONNECT)';
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new Error(`${expected}; this is not a URL`);
  }
  if (url.protocol !== 'http:') {
    throw new Error(`${expected}; ${url.protocol.replace(/:$/, '')}:// proxies are not supported (only HTTP CONNECT)`);
  }
  // The port must be written: WHATWG URLs drop :80, and proxies have no common default (3128, 8080, 8888).
  if (!/^http:\/\/(?:[^@/]*@)?(?:\[[^\]]*\]|[^:/]*):\d+\/?$/i.test(raw.trim())) throw new Error(`${expected}, with its port and no path`);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (host === '') throw new Error(`${expected}; the host is missing`);
  const decode = (part: string) => {
    try {
      return decodeURIComponent(part);
    } catch {
      throw new Error(`${expected}; its user or password is not valid percent-encoding`);
    }
  };
  return {
    host,
    port: url.port === '' ? 80 : Number(url.port),
    ...(url.username !== '' || url.password !== '' ? { username: decode(url.username), password: decode(url.password) } : {}),
  };
}

/** OUTBOUND_PROXY_BYPASS: comma-separated `host.name`, `.domain`, IP addresses and CIDR blocks, lower-cased, a trailing dot removed. */
function parseProxyBypass(raw: string): string[] {
  const entries = commaSeparated(raw).map((entry) => entry.toLowerCase().replace(/(?<=[^.])\.$/, ''));
  for (const entry of entries) {
    if (addressOrBlock(entry.replace(/^\[|\]$/g, '')) !== undefined) continue;
    if (/^\.?[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?)*$/.test(entry)) continue;
    throw new Error(
      `expected comma-separated host names (hooks.example.com), domains with a leading dot for their subdomains (.example.com), IP addresses or CIDR blocks (10.0.0.0/8); "${entry}" is none of them (no ports, no wildcards)`,
    );
  }
  return entries.map((entry) => entry.replace(/^\[|\]$/g, ''));
}

/** OUTBOUND_SOURCE_ADDRESSES: comma-separated IP addresses or CIDR blocks, as written. */
function parseSourceAddresses(raw: string): string[] {
  const entries = commaSeparated(raw);
  for (const entry of entries) {
    if (addressOrBlock(entry) === undefined) throw new Error(`expected comma-separated IP addresses or CIDR blocks (203.0.113.7,198.51.100.0/28); "${entry}" is neither`);
  }
  if (entries.length === 0) throw new Error('expected at least one IP address or CIDR block');
  return entries;
}

/** OUTBOUND_PROXY as shown: credentials masked (`http://****:****@proxy.internal:3128`), never in clear. */
function maskOutboundProxy(proxy: OutboundProxy): string {
  const host = proxy.host.includes(':') ? `[${proxy.host}]` : proxy.host;
  return `http://${proxy.username !== undefined ? '****:****@' : ''}${host}:${proxy.port}`;
}

/** An OTLP endpoint: an http(s) URL. */
function parseOtlpEndpoint(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new Error(`expected an http(s) URL (http://collector:4318); got "${raw}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`expected an http(s) URL: spans are sent over OTLP/HTTP (grpc is not supported); got "${raw}"`);
  return raw.trim();
}

/** OTEL_EXPORTER_OTLP_HEADERS: `name=value,name2=value2`, values percent-decoded (the standard's form). */
function parseOtlpHeaders(raw: string): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const entry of commaSeparated(raw)) {
    const at = entry.indexOf('=');
    const name = entry.slice(0, Math.max(0, at)).trim();
    if (at < 0 || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) throw new Error('expected comma-separated name=value pairs (api-key=…,x-team=…), each name a header name');
    try {
      headers[name.toLowerCase()] = decodeURIComponent(entry.slice(at + 1).trim());
    } catch {
      throw new Error(`the value of ${name} is not valid percent-encoding`);
    }
  }
  return headers;
}

/** OTEL_EXPORTER_OTLP_HEADERS as shown: the names, every value masked whole (an API key may be short). */
const maskOtlpHeaders = (headers: Record<string, string>) =>
  Object.keys(headers)
    .map((name) => `${name}=****`)
    .join(',');

/** An OTLP endpoint as shown: a password in it masked. */
const maskEndpoint = (url: string | undefined) => (url === undefined ? null : url.includes('@') ? maskDatabaseUrl(url) : url);

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export type Env = Record<string, string | undefined>;

export interface LoadConfigOptions {
  /** Where a variable's value came from, added to the message of a bad value (`in /etc/rewards/rewards.env`); undefined: the environment. */
  origin?: (name: string) => string | undefined;
}

export function loadConfig(env: Env = process.env, options: LoadConfigOptions = {}): Config {
  const problems: string[] = [];
  const read = <T>(name: string, fallback: T, parse: (raw: string) => T): T => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    try {
      return parse(raw);
    } catch (error) {
      const origin = options.origin?.(name);
      problems.push(`${name}${origin ? ` (${origin})` : ''}: ${(error as Error).message}`);
      return fallback;
    }
  };
  const integer = (min: number, max: number) => (raw: string) => {
    if (!/^\d+$/.test(raw.trim())) throw new Error(`expected an integer, got "${raw}"`);
    const value = Number(raw);
    if (value < min || value > max) throw new Error(`expected ${min}..${max}, got ${value}`);
    return value;
  };
  const duration = (minMs: number) => (raw: string) => {
    const ms = parseDuration(raw);
    if (ms < minMs) throw new Error(`must be at least ${minMs}ms, got "${raw}"`);
    return ms;
  };
  const boolean = (raw: string) => {
    if (/^(true|1|yes|on)$/i.test(raw)) return true;
    if (/^(false|0|no|off)$/i.test(raw)) return false;
    throw new Error(`expected true or false, got "${raw}"`);
  };

  const port = read('PORT', 8080, integer(0, 65535));
  const host = read('HOST', '127.0.0.1', (raw) => raw);
  const dataDir = resolve(read('DATA_DIR', './data', (raw) => raw));
  const databaseUrl = read('DATABASE_URL', `sqlite:${resolve(dataDir, 'rewards.db')}`, (raw) => {
    if (raw.startsWith('sqlite:') || /^postgres(ql)?:\/\//.test(raw)) return raw;
    throw new Error(`expected "sqlite:PATH" or "postgres://…", got "${raw}"`);
  });
  const databaseListenUrl = read<string | undefined>('DATABASE_LISTEN_URL', undefined, (raw) => {
    if (raw === 'off' || /^postgres(ql)?:\/\//.test(raw)) return raw;
    throw new Error(`expected "off" or "postgres://…" (a direct connection for LISTEN, not through a pooler in transaction mode), got "${raw}"`);
  });
  const databaseReadUrl = read<string | undefined>('DATABASE_READ_URL', undefined, (raw) => {
    if (/^postgres(ql)?:\/\//.test(raw)) return raw;
    throw new Error(`expected "postgres://…" (a replica of DATABASE_URL's database), got "${raw}"`);
  });
  if (databaseReadUrl && databaseUrl.startsWith('sqlite:')) problems.push('DATABASE_READ_URL: a replica is for PostgreSQL; SQLite has no replica to read from');
  const durationOrOff = (minMs: number) => (raw: string) => (raw.trim() === '0' ? 0 : duration(minMs)(raw));
  const bounds = DEFAULT_CONNECTION_BOUNDS;
  const databaseBounds: ConnectionBounds = {
    connectTimeoutMs: read('DATABASE_CONNECT_TIMEOUT', bounds.connectTimeoutMs, duration(100)),
    poolTimeoutMs: read('DATABASE_POOL_TIMEOUT', bounds.poolTimeoutMs, duration(10)),
    statementTimeoutMs: read('DATABASE_STATEMENT_TIMEOUT', bounds.statementTimeoutMs, durationOrOff(1000)),
    keepAliveMs: read('DATABASE_KEEPALIVE', bounds.keepAliveMs, durationOrOff(1000)),
    heartbeatTimeoutMs: read('DATABASE_HEARTBEAT_TIMEOUT', bounds.heartbeatTimeoutMs, durationOrOff(100)),
  };
  const publicUrl = read('PUBLIC_URL', `http://${host.includes(':') ? `[${host}]` : host}:${port}`, parsePublicUrl);
  const secretKey = read<string | undefined>('SECRET_KEY', undefined, (raw) => {
    if (Buffer.from(raw, 'base64').length !== 32) throw new Error('expected 32 bytes encoded in base64 (openssl rand -base64 32)');
    return raw;
  });
  const secretKeyPrevious = read<string[]>('SECRET_KEY_PREVIOUS', [], (raw) => {
    const keys = raw
      .split(',')
      .map((key) => key.trim())
      .filter((key) => key !== '');
    for (const key of keys) if (Buffer.from(key, 'base64').length !== 32) throw new Error('expected comma-separated keys of 32 bytes encoded in base64');
    return keys;
  });
  if (!secretKey && !databaseUrl.startsWith('sqlite:')) {
    problems.push('SECRET_KEY: required with PostgreSQL (32 bytes in base64: openssl rand -base64 32)');
  }

  const config: Config = {
    port,
    host,
    databaseUrl,
    databaseListenUrl,
    databasePreparedStatements: read('DATABASE_PREPARED_STATEMENTS', true, boolean),
    databaseReadUrl,
    databaseBounds,
    livenessTimeoutMs: read('LIVENESS_TIMEOUT', 120_000, duration(1000)),
    dataDir,
    publicUrl,
    tokenTtlMs: read('TOKEN_TTL', 3_600_000, duration(1000)),
    secretKey,
    secretKeyPrevious,
    retryMaxAttempts: read('RETRY_MAX_ATTEMPTS', 5, integer(1, 100)),
    retryIntervalMs: read('RETRY_INTERVAL', 3 * 3_600_000, duration(1)),
    subscriptionDisableAfterMs: read('SUBSCRIPTION_DISABLE_AFTER', 5 * 86_400_000, (raw) => (raw.trim() === '0' ? 0 : duration(1)(raw))),
    circuitBreaker: {
      failures: read('CIRCUIT_BREAKER_FAILURES', DEFAULT_CIRCUIT_SETTINGS.failures, integer(0, 10_000)),
      probeIntervalMs: read('CIRCUIT_BREAKER_PROBE_INTERVAL', DEFAULT_CIRCUIT_SETTINGS.probeIntervalMs, duration(10)),
      probeMaxIntervalMs: read('CIRCUIT_BREAKER_PROBE_MAX_INTERVAL', DEFAULT_CIRCUIT_SETTINGS.probeMaxIntervalMs, duration(10)),
    },
    notificationRetentionMs: read('NOTIFICATION_RETENTION', 90 * 86_400_000, (raw) => (raw.trim() === '0' ? 0 : duration(60_000)(raw))),
    callbackTimeoutMs: read('CALLBACK_TIMEOUT', 10_000, duration(1)),
    callbackAllowPrivateNetworks: read('CALLBACK_ALLOW_PRIVATE_NETWORKS', false, boolean),
    mtlsCertFile: read<string | undefined>('MTLS_CERT_FILE', undefined, (raw) => raw),
    mtlsKeyFile: read<string | undefined>('MTLS_KEY_FILE', undefined, (raw) => raw),
    mtlsCaFile: read<string | undefined>('MTLS_CA_FILE', undefined, (raw) => raw),
    outboundProxy: read<OutboundProxy | undefined>('OUTBOUND_PROXY', undefined, parseOutboundProxy),
    outboundProxyBypass: read<string[]>('OUTBOUND_PROXY_BYPASS', [], parseProxyBypass),
    outboundSourceAddresses: read<string[]>('OUTBOUND_SOURCE_ADDRESSES', [], parseSourceAddresses),
    jobLeaseMs: read('JOB_LEASE', 60_000, duration(100)),
    metricsPort: read<number | undefined>('METRICS_PORT', undefined, integer(0, 65535)),
    trustProxy: read<TrustProxy>('TRUST_PROXY', { kind: 'none' }, parseTrustProxy),
    httpRequestTimeoutMs: read('HTTP_REQUEST_TIMEOUT', 30_000, duration(100)),
    httpHeadersTimeoutMs: read('HTTP_HEADERS_TIMEOUT', 10_000, duration(100)),
    httpMaxConnections: read('HTTP_MAX_CONNECTIONS', 10_000, integer(1, 1_000_000)),
    httpMaxConnectionsPerAddress: read('HTTP_MAX_CONNECTIONS_PER_ADDRESS', 256, integer(0, 1_000_000)),
    logLevel: read('LOG_LEVEL', 'info', (raw) => {
      if (!LOG_LEVELS.includes(raw)) throw new Error(`expected one of ${LOG_LEVELS.join(', ')}`);
      return raw;
    }),
    authRefreshIntervalMs: read('AUTH_REFRESH_INTERVAL', 2_000, (raw) => {
      const ms = duration(10)(raw);
      if (ms > 60_000) throw new Error(`must be at most 60s (a deactivation must reach every process quickly), got "${raw}"`);
      return ms;
    }),
    tracing: {
      endpoint: read<string | undefined>('OTEL_EXPORTER_OTLP_ENDPOINT', undefined, parseOtlpEndpoint),
      tracesEndpoint: read<string | undefined>('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', undefined, parseOtlpEndpoint),
      protocol: read<TracingConfig['protocol']>('OTEL_EXPORTER_OTLP_PROTOCOL', 'http/protobuf', (raw) => {
        if (raw === 'http/protobuf' || raw === 'http/json') return raw;
        throw new Error(`expected http/protobuf or http/json (grpc is not supported), got "${raw}"`);
      }),
      headers: read<Record<string, string>>('OTEL_EXPORTER_OTLP_HEADERS', {}, parseOtlpHeaders),
      serviceName: read('OTEL_SERVICE_NAME', 'rewards', (raw) => raw.trim() || 'rewards'),
      sampler: read<TraceSampler>('OTEL_TRACES_SAMPLER', 'parentbased_always_on', (raw) => {
        const name = raw.trim().toLowerCase();
        if ((TRACE_SAMPLERS as readonly string[]).includes(name)) return name as TraceSampler;
        throw new Error(`expected one of ${TRACE_SAMPLERS.join(', ')}, got "${raw}"`);
      }),
      samplerRatio: read('OTEL_TRACES_SAMPLER_ARG', 1, (raw) => {
        const ratio = Number(raw.trim());
        if (raw.trim() === '' || !Number.isFinite(ratio) || ratio < 0 || ratio > 1) throw new Error(`expected a ratio from 0 to 1 (0.25 samples a quarter of the traces), got "${raw}"`);
        return ratio;
      }),
      disabled: read('OTEL_SDK_DISABLED', false, boolean),
    },
  };
  if (config.httpHeadersTimeoutMs > config.httpRequestTimeoutMs) {
    problems.push(`HTTP_HEADERS_TIMEOUT: must not be longer than HTTP_REQUEST_TIMEOUT (${config.httpHeadersTimeoutMs}ms > ${config.httpRequestTimeoutMs}ms)`);
  }
  if (config.circuitBreaker.probeMaxIntervalMs < config.circuitBreaker.probeIntervalMs) {
    problems.push(
      `CIRCUIT_BREAKER_PROBE_MAX_INTERVAL: must not be shorter than CIRCUIT_BREAKER_PROBE_INTERVAL (${config.circuitBreaker.probeMaxIntervalMs}ms < ${config.circuitBreaker.probeIntervalMs}ms)`,
    );
  }
  if (Boolean(config.mtlsCertFile) !== Boolean(config.mtlsKeyFile)) {
    problems.push('MTLS_CERT_FILE and MTLS_KEY_FILE: set both or neither');
  }
  if (config.outboundProxyBypass.length > 0 && !env.OUTBOUND_PROXY) {
    problems.push('OUTBOUND_PROXY_BYPASS: lists what bypasses OUTBOUND_PROXY, which is not set');
  }
  if (problems.length > 0) {
    throw new ConfigError(`Invalid configuration:\n  - ${problems.join('\n  - ')}`);
  }
  return Object.freeze(config);
}

/** `3h`, `10s`, `250ms`: the largest unit that gives a whole number (the form the settings are written in). */
function formatDuration(ms: number): string {
  for (const unit of ['d', 'h', 'm', 's'] as const) {
    const size = DURATION_UNITS[unit]!;
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}

/** A secret shown as `****` and its last 4 characters, as the API masks stored credentials. */
export function maskSecret(secret: string): string {
  return `****${secret.slice(-4)}`;
}

/** A database URL with its password masked (`postgres://rewards:****@db:5432/rewards`). */
export function maskDatabaseUrl(url: string): string {
  if (url.startsWith('sqlite:')) return url;
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '****';
    return parsed.toString();
  } catch {
    return url.replace(/\/\/([^:/@]*):[^@]*@/, '//$1:****@');
  }
}

const duration = formatDuration;
const durationOrNever = (ms: number) => (ms === 0 ? '0' : formatDuration(ms));

function formatTrustProxy(trust: TrustProxy): string {
  if (trust.kind === 'none') return 'false';
  if (trust.kind === 'all') return 'true';
  return trust.kind === 'hops' ? String(trust.hops) : trust.addresses.join(',');
}

/**
 * Every variable the service reads (loadConfig), each with its effective value as `rewards config
 * show` prints it: defaults filled in, DATA_DIR absolute, secrets and passwords masked, null when unset.
 * A configuration file may set these keys and no others.
 */
export const CONFIG_VARIABLES: Readonly<Record<string, (config: Config) => string | null>> = Object.freeze({
  PORT: (c: Config) => String(c.port),
  HOST: (c: Config) => c.host,
  DATA_DIR: (c: Config) => c.dataDir,
  DATABASE_URL: (c: Config) => maskDatabaseUrl(c.databaseUrl),
  DATABASE_LISTEN_URL: (c: Config) => (c.databaseListenUrl === undefined ? null : maskDatabaseUrl(c.databaseListenUrl)),
  DATABASE_PREPARED_STATEMENTS: (c: Config) => (c.databasePreparedStatements ? 'on' : 'off'),
  DATABASE_READ_URL: (c: Config) => (c.databaseReadUrl === undefined ? null : maskDatabaseUrl(c.databaseReadUrl)),
  DATABASE_CONNECT_TIMEOUT: (c: Config) => duration(c.databaseBounds.connectTimeoutMs),
  DATABASE_POOL_TIMEOUT: (c: Config) => duration(c.databaseBounds.poolTimeoutMs),
  DATABASE_STATEMENT_TIMEOUT: (c: Config) => durationOrNever(c.databaseBounds.statementTimeoutMs),
  DATABASE_KEEPALIVE: (c: Config) => durationOrNever(c.databaseBounds.keepAliveMs),
  DATABASE_HEARTBEAT_TIMEOUT: (c: Config) => durationOrNever(c.databaseBounds.heartbeatTimeoutMs),
  LIVENESS_TIMEOUT: (c: Config) => duration(c.livenessTimeoutMs),
  PUBLIC_URL: (c: Config) => c.publicUrl,
  TOKEN_TTL: (c: Config) => duration(c.tokenTtlMs),
  SECRET_KEY: (c: Config) => (c.secretKey === undefined ? null : maskSecret(c.secretKey)),
  SECRET_KEY_PREVIOUS: (c: Config) => (c.secretKeyPrevious.length === 0 ? null : c.secretKeyPrevious.map(maskSecret).join(',')),
  RETRY_MAX_ATTEMPTS: (c: Config) => String(c.retryMaxAttempts),
  RETRY_INTERVAL: (c: Config) => duration(c.retryIntervalMs),
  SUBSCRIPTION_DISABLE_AFTER: (c: Config) => durationOrNever(c.subscriptionDisableAfterMs),
  CIRCUIT_BREAKER_FAILURES: (c: Config) => String(c.circuitBreaker.failures),
  CIRCUIT_BREAKER_PROBE_INTERVAL: (c: Config) => duration(c.circuitBreaker.probeIntervalMs),
  CIRCUIT_BREAKER_PROBE_MAX_INTERVAL: (c: Config) => duration(c.circuitBreaker.probeMaxIntervalMs),
  NOTIFICATION_RETENTION: (c: Config) => durationOrNever(c.notificationRetentionMs),
  CALLBACK_TIMEOUT: (c: Config) => duration(c.callbackTimeoutMs),
  CALLBACK_ALLOW_PRIVATE_NETWORKS: (c: Config) => String(c.callbackAllowPrivateNetworks),
  MTLS_CERT_FILE: (c: Config) => c.mtlsCertFile ?? null,
  MTLS_KEY_FILE: (c: Config) => c.mtlsKeyFile ?? null,
  MTLS_CA_FILE: (c: Config) => c.mtlsCaFile ?? null,
  OUTBOUND_PROXY: (c: Config) => (c.outboundProxy === undefined ? null : maskOutboundProxy(c.outboundProxy)),
  OUTBOUND_PROXY_BYPASS: (c: Config) => (c.outboundProxyBypass.length === 0 ? null : c.outboundProxyBypass.join(',')),
  OUTBOUND_SOURCE_ADDRESSES: (c: Config) => (c.outboundSourceAddresses.length === 0 ? null : c.outboundSourceAddresses.join(',')),
  JOB_LEASE: (c: Config) => duration(c.jobLeaseMs),
  METRICS_PORT: (c: Config) => (c.metricsPort === undefined ? null : String(c.metricsPort)),
  TRUST_PROXY: (c: Config) => formatTrustProxy(c.trustProxy),
  HTTP_REQUEST_TIMEOUT: (c: Config) => duration(c.httpRequestTimeoutMs),
  HTTP_HEADERS_TIMEOUT: (c: Config) => duration(c.httpHeadersTimeoutMs),
  HTTP_MAX_CONNECTIONS: (c: Config) => String(c.httpMaxConnections),
  HTTP_MAX_CONNECTIONS_PER_ADDRESS: (c: Config) => String(c.httpMaxConnectionsPerAddress),
  LOG_LEVEL: (c: Config) => c.logLevel,
  AUTH_REFRESH_INTERVAL: (c: Config) => duration(c.authRefreshIntervalMs),
  OTEL_EXPORTER_OTLP_ENDPOINT: (c: Config) => maskEndpoint(c.tracing.endpoint),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: (c: Config) => maskEndpoint(c.tracing.tracesEndpoint),
  OTEL_EXPORTER_OTLP_PROTOCOL: (c: Config) => c.tracing.protocol,
  OTEL_EXPORTER_OTLP_HEADERS: (c: Config) => (Object.keys(c.tracing.headers).length === 0 ? null : maskOtlpHeaders(c.tracing.headers)),
  OTEL_SERVICE_NAME: (c: Config) => c.tracing.serviceName,
  OTEL_TRACES_SAMPLER: (c: Config) => c.tracing.sampler,
  OTEL_TRACES_SAMPLER_ARG: (c: Config) => String(c.tracing.samplerRatio),
  OTEL_SDK_DISABLED: (c: Config) => String(c.tracing.disabled),
});
