// needs: nothing
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import Fastify from 'fastify';
import { pino } from 'pino';
import { lazyRequestLogger } from '../../src/http/request-logger.js';

/** A pino logger writing JSON lines into an array, and a Fastify app using it with the lazy request logger. */
async function appLoggingAt(level: string) {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  const log = pino({ level, redact: { paths: ['*.client_secret'], censor: '[redacted]' } }, sink);
  let children = 0;
  // Children inherit this own property (pino builds them with Object.create), so count every child.
  // eslint-disable-next-line @typescript-eslint/unbound-method -- applied below to the logger it is called on
  const child = log.child;
  log.child = function (this: typeof log, ...args: Parameters<typeof log.child>) {
    children += 1;
    return child.apply(this, args);
  } as typeof log.child;
  const app = Fastify({ loggerInstance: log, childLoggerFactory: lazyRequestLogger, genReqId: () => 'req-42' });
  app.get('/quiet', async (request) => {
    request.log.info('not written at warn');
    request.log.debug({ detail: 1 }, 'nor this');
    return { ok: true };
  });
  app.get('/loud', async (request) => {
    request.log.warn({ nested: { client_secret: 'rrs_cs_secret' } }, 'something to see');
    return { ok: true };
  });
  app.get('/errors-only', { logLevel: 'error' }, async (request) => {
    request.log.warn('below this route’s level');
    request.log.error('at this route’s level');
    return { ok: true };
  });
  await app.ready();
  return { app, lines, children: () => children };
}

describe('lazy request logger', () => {
  it('makes no child logger for a request that logs nothing at the configured level', async () => {
    const { app, lines, children } = await appLoggingAt('warn');
    const before = children();
    for (let i = 0; i < 5; i++) assert.equal((await app.inject('/quiet')).statusCode, 200);
    assert.equal(children() - before, 0);
    assert.deepEqual(lines, []);
    await app.close();
  });

  it('writes through a real child: the request id, redaction and the message', async () => {
    const { app, lines } = await appLoggingAt('warn');
    await app.inject('/loud');
    const line = lines.find((l) => l.msg === 'something to see');
    assert.ok(line, JSON.stringify(lines));
    assert.equal(line.reqId, 'req-42');
    assert.equal(line.level, 40);
    assert.deepEqual(line.nested, { client_secret: '[redacted]' });
    await app.close();
  });

  it('honours a route’s own log level', async () => {
    const { app, lines } = await appLoggingAt('info');
    await app.inject('/errors-only');
    const messages = lines.map((l) => l.msg);
    assert.ok(messages.includes('at this route’s level'), JSON.stringify(messages));
    assert.ok(!messages.includes('below this route’s level'));
    assert.ok(!messages.includes('incoming request'), 'Fastify’s info lines are below the route’s level too');
    await app.close();
  });

  it('at info, Fastify’s request lines carry the request id as before', async () => {
    const { app, lines } = await appLoggingAt('info');
    await app.inject('/quiet');
    const incoming = lines.find((l) => l.msg === 'incoming request');
    const completed = lines.find((l) => l.msg === 'request completed');
    assert.equal(incoming?.reqId, 'req-42');
    assert.equal(completed?.reqId, 'req-42');
    assert.equal((completed?.res as { statusCode?: number } | undefined)?.statusCode, 200);
    assert.ok(
      lines.some((l) => l.msg === 'not written at warn'),
      'info lines are written at info',
    );
    await app.close();
  });
});
