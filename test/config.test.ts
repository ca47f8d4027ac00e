// needs: nothing
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig, parseDuration } from '../src/config.js';

describe('configuration from the environment', () => {
  it('has the documented defaults', () => {
    const config = loadConfig({});
    assert.equal(config.port, 8080);
    assert.equal(config.host, '127.0.0.1');
    assert.match(config.databaseUrl, /^sqlite:.*data\/rewards\.db$/);
    assert.equal(config.publicUrl, 'http://127.0.0.1:8080');
    assert.equal(config.tokenTtlMs, 3_600_000);
    assert.equal(config.retryMaxAttempts, 5);
    assert.equal(config.retryIntervalMs, 3 * 3_600_000);
    assert.equal(config.callbackTimeoutMs, 10_000);
    assert.equal(config.callbackAllowPrivateNetworks, false);
    assert.equal(config.logLevel, 'info');
    assert.equal(config.subscriptionDisableAfterMs, 5 * 86_400_000);
    assert.ok(Object.isFrozen(config));
  });

  it('AUTH_REFRESH_INTERVAL: 2s by default, a duration from 10ms to 60s', () => {
    assert.equal(loadConfig({}).authRefreshIntervalMs, 2_000);
    assert.equal(loadConfig({ AUTH_REFRESH_INTERVAL: '250ms' }).authRefreshIntervalMs, 250);
    assert.throws(() => loadConfig({ AUTH_REFRESH_INTERVAL: '5ms' }), /AUTH_REFRESH_INTERVAL/);
    assert.throws(() => loadConfig({ AUTH_REFRESH_INTERVAL: '2m' }), /AUTH_REFRESH_INTERVAL: must be at most 60s/);
  });

  it('SUBSCRIPTION_DISABLE_AFTER takes a duration, or 0 for never', () => {
    assert.equal(loadConfig({ SUBSCRIPTION_DISABLE_AFTER: '0' }).subscriptionDisableAfterMs, 0);
    assert.equal(loadConfig({ SUBSCRIPTION_DISABLE_AFTER: '36h' }).subscriptionDisableAfterMs, 36 * 3_600_000);
    assert.throws(() => loadConfig({ SUBSCRIPTION_DISABLE_AFTER: '5' }), /SUBSCRIPTION_DISABLE_AFTER/);
  });

  it('parses durations with units', () => {
    assert.equal(parseDuration('200ms'), 200);
    assert.equal(parseDuration('10s'), 10_000);
    assert.equal(parseDuration('3h'), 10_800_000);
    assert.equal(parseDuration('1.5m'), 90_000);
    assert.throws(() => parseDuration('10'), /unit/);
  });

  it('names every bad variable in one clear message', () => {
    assert.throws(
      () => loadConfig({ RETRY_INTERVAL: 'abc', PORT: '99999', CALLBACK_ALLOW_PRIVATE_NETWORKS: 'maybe', LOG_LEVEL: 'loud' }),
      (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        assert.match(error.message, /RETRY_INTERVAL: expected a number with a unit .* got "abc"/);
        assert.match(error.message, /PORT: expected 0\.\.65535/);
        assert.match(error.message, /CALLBACK_ALLOW_PRIVATE_NETWORKS/);
        assert.match(error.message, /LOG_LEVEL/);
        return true;
      },
    );
  });

  it('requires SECRET_KEY with PostgreSQL and checks its length', () => {
    assert.throws(() => loadConfig({ DATABASE_URL: 'postgres://u:p@127.0.0.1/db' }), /SECRET_KEY: required with PostgreSQL/);
    assert.throws(() => loadConfig({ SECRET_KEY: 'c2hvcnQ=' }), /32 bytes/);
    assert.throws(() => loadConfig({ DATABASE_URL: 'mysql://x' }), /DATABASE_URL/);
  });

  it('DATABASE_PREPARED_STATEMENTS: on by default; off (or false) turns it off; anything else is refused', () => {
    assert.equal(loadConfig({}).databasePreparedStatements, true);
    assert.equal(loadConfig({ DATABASE_PREPARED_STATEMENTS: 'off' }).databasePreparedStatements, false);
    assert.equal(loadConfig({ DATABASE_PREPARED_STATEMENTS: 'false' }).databasePreparedStatements, false);
    assert.equal(loadConfig({ DATABASE_PREPARED_STATEMENTS: 'on' }).databasePreparedStatements, true);
    assert.throws(() => loadConfig({ DATABASE_PREPARED_STATEMENTS: 'sometimes' }), /DATABASE_PREPARED_STATEMENTS/);
  });

  it('DATABASE_LISTEN_URL: unset, a direct postgres:// URL, or off', () => {
    assert.equal(loadConfig({}).databaseListenUrl, undefined);
    assert.equal(loadConfig({ DATABASE_LISTEN_URL: 'off' }).databaseListenUrl, 'off');
    assert.equal(loadConfig({ DATABASE_LISTEN_URL: 'postgres://u:p@db:5432/rewards' }).databaseListenUrl, 'postgres://u:p@db:5432/rewards');
    assert.throws(() => loadConfig({ DATABASE_LISTEN_URL: 'no' }), /DATABASE_LISTEN_URL/);
  });

  it('DATABASE_* bounds and LIVENESS_TIMEOUT: documented defaults, durations with units, 0 turns off what may be off', () => {
    const config = loadConfig({});
    assert.deepEqual(config.databaseBounds, { connectTimeoutMs: 5_000, poolTimeoutMs: 5_000, statementTimeoutMs: 30_000, keepAliveMs: 10_000, heartbeatTimeoutMs: 5_000 });
    assert.equal(config.livenessTimeoutMs, 120_000);
    const off = loadConfig({ DATABASE_STATEMENT_TIMEOUT: '0', DATABASE_KEEPALIVE: '0', DATABASE_HEARTBEAT_TIMEOUT: '0' }).databaseBounds;
    assert.deepEqual([off.statementTimeoutMs, off.keepAliveMs, off.heartbeatTimeoutMs], [0, 0, 0]);
    assert.equal(loadConfig({ DATABASE_HEARTBEAT_TIMEOUT: '800ms' }).databaseBounds.heartbeatTimeoutMs, 800);
    assert.throws(() => loadConfig({ DATABASE_CONNECT_TIMEOUT: '0' }), /DATABASE_CONNECT_TIMEOUT: /);
    assert.throws(() => loadConfig({ DATABASE_POOL_TIMEOUT: '5' }), /DATABASE_POOL_TIMEOUT: .*unit/);
    assert.throws(() => loadConfig({ LIVENESS_TIMEOUT: '10ms' }), /LIVENESS_TIMEOUT: /);
  });

  it('DATABASE_READ_URL: unset, or a postgres:// URL beside a PostgreSQL DATABASE_URL', () => {
    const postgres = { DATABASE_URL: 'postgres://u:p@db:5432/rewards', SECRET_KEY: Buffer.alloc(32).toString('base64') };
    assert.equal(loadConfig(postgres).databaseReadUrl, undefined);
    assert.equal(loadConfig({ ...postgres, DATABASE_READ_URL: 'postgres://u:p@replica:5432/rewards' }).databaseReadUrl, 'postgres://u:p@replica:5432/rewards');
    assert.throws(() => loadConfig({ ...postgres, DATABASE_READ_URL: 'replica' }), /DATABASE_READ_URL: expected/);
    assert.throws(() => loadConfig({ DATABASE_READ_URL: 'postgres://u:p@replica:5432/rewards' }), /DATABASE_READ_URL: a replica is for PostgreSQL/);
  });

  it('NOTIFICATION_RETENTION: 90 days unless given, 0 keeps everything, at least a minute', () => {
    assert.equal(loadConfig({}).notificationRetentionMs, 90 * 86_400_000);
    assert.equal(loadConfig({ NOTIFICATION_RETENTION: '0' }).notificationRetentionMs, 0);
    assert.equal(loadConfig({ NOTIFICATION_RETENTION: '30d' }).notificationRetentionMs, 30 * 86_400_000);
    assert.throws(() => loadConfig({ NOTIFICATION_RETENTION: '30s' }), /NOTIFICATION_RETENTION/);
    assert.throws(() => loadConfig({ NOTIFICATION_RETENTION: 'soon' }), /NOTIFICATION_RETENTION/);
  });

  it('TRUST_PROXY: false by default; true, a number of hops, or proxy addresses and blocks; anything else is named', () => {
    assert.deepEqual(loadConfig({}).trustProxy, { kind: 'none' });
    assert.deepEqual(loadConfig({ TRUST_PROXY: 'true' }).trustProxy, { kind: 'all' });
    assert.deepEqual(loadConfig({ TRUST_PROXY: '2' }).trustProxy, { kind: 'hops', hops: 2 });
    assert.deepEqual(loadConfig({ TRUST_PROXY: '10.0.0.0/8, 192.0.2.7,fd00::/8' }).trustProxy, { kind: 'addresses', addresses: ['10.0.0.0/8', '192.0.2.7', 'fd00::/8'] });
    assert.throws(() => loadConfig({ TRUST_PROXY: 'lb.internal' }), /TRUST_PROXY: .*"lb\.internal"/);
  });

  it('HTTP_* bounds: documented defaults, durations with units, the headers timeout within the request timeout', () => {
    const config = loadConfig({});
    assert.equal(config.httpRequestTimeoutMs, 30_000);
    assert.equal(config.httpHeadersTimeoutMs, 10_000);
    assert.equal(config.httpMaxConnections, 10_000);
    assert.equal(config.httpMaxConnectionsPerAddress, 256);
    assert.equal(loadConfig({ HTTP_MAX_CONNECTIONS_PER_ADDRESS: '0' }).httpMaxConnectionsPerAddress, 0);
    assert.throws(() => loadConfig({ HTTP_REQUEST_TIMEOUT: '30' }), /HTTP_REQUEST_TIMEOUT: .*unit/);
    assert.throws(() => loadConfig({ HTTP_MAX_CONNECTIONS: '0' }), /HTTP_MAX_CONNECTIONS: /);
    assert.throws(() => loadConfig({ HTTP_REQUEST_TIMEOUT: '5s' }), /HTTP_HEADERS_TIMEOUT: must not be longer than HTTP_REQUEST_TIMEOUT/);
  });
});
