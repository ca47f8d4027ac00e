// needs: every-node-line
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { OutboundConfigError, type OutboundConfig } from '../../src/worker/outbound/create-outbound.js';
import type { DeliveryAttemptInput } from '../../src/worker/outbound/deliver.js';
import { createThreadedOutbound, type ThreadedOutbound } from '../../src/worker/outbound/threaded-outbound.js';
import { gate, startHttpReceiver, unusedPort, type Receiver } from '../support/receivers.js';

/**
 * The service delivers through createThreadedOutbound (deps.ts): the same attempts as
 * createOutbound (deliver.test.ts covers their rules), run in a worker thread.
 */
const config: OutboundConfig = { callbackTimeoutMs: 5000, callbackAllowPrivateNetworks: true, mtlsCertFile: undefined, mtlsKeyFile: undefined, mtlsCaFile: undefined };
const secret = `whsec_${randomBytes(32).toString('base64')}`;
const input = (url: string, n: number): DeliveryAttemptInput => ({
  accountId: 'acc_test',
  url,
  body: JSON.stringify({ id: `req_${n}`, rewardValue: n }),
  eventType: 'registered-requests',
  msgId: `msg_${n}`,
  secrets: [secret],
});

describe('outbound delivery in a worker thread', () => {
  let receiver: Receiver;
  let outbound: ThreadedOutbound;
  before(async () => {
    receiver = await startHttpReceiver();
    outbound = createThreadedOutbound(config);
  });
  after(async () => {
    await outbound.close();
    await receiver.close();
  });

  it('starts its thread on the first call, and 200 concurrent calls arrive signed, each answered to its caller', async () => {
    assert.equal(outbound.thread, undefined, 'no thread before the first call');
    receiver.respond((request) => ({ status: 200, body: `got ${JSON.parse(request.body).id}` }));
    const results = await Promise.all(Array.from({ length: 200 }, (_, n) => outbound.deliverAttempt(input(`${receiver.url}/hook`, n))));
    assert.ok(outbound.thread, 'the thread runs');
    results.forEach((result, n) => {
      assert.equal(result.ok, true, result.error);
      assert.equal(result.responseBody, `got req_${n}`);
    });
    assert.equal(receiver.requests.length, 200);
    for (const seen of receiver.requests) {
      const headers = Object.fromEntries(Object.entries(seen.headers).map(([k, v]) => [k, String(v)]));
      assert.deepEqual(new Webhook(secret).verify(seen.body, headers), JSON.parse(seen.body));
    }
  });

  it('a failed call is a result, not an exception', async () => {
    const result = await outbound.deliverAttempt(input(`http://127.0.0.1:${await unusedPort()}/hook`, 1));
    assert.equal(result.ok, false);
    assert.match(result.error ?? '', /connection refused/);
  });

  it('when the thread dies, its calls fail with the reason and the next call starts a new thread', async () => {
    const release = gate();
    receiver.respond(async () => (await release.wait, { status: 204 }));
    const inFlight = Promise.all([1, 2, 3].map((n) => outbound.deliverAttempt(input(receiver.url, n))));
    await new Promise((resolve) => setTimeout(resolve, 200));
    const dying = outbound.thread!;
    await dying.terminate();
    const failed = await inFlight;
    assert.ok(
      failed.every((result) => !result.ok && /outbound thread stopped/.test(result.error ?? '')),
      JSON.stringify(failed),
    );
    release.open();
    receiver.respond(() => ({ status: 204 }));
    const next = await outbound.deliverAttempt(input(receiver.url, 4));
    assert.equal(next.ok, true, next.error);
    assert.notEqual(outbound.thread, dying);
  });

  it('close() lets the calls in flight finish; later calls fail at once', async () => {
    const own = createThreadedOutbound(config);
    const release = gate();
    receiver.respond(async () => (await release.wait, { status: 204 }));
    const call = own.deliverAttempt(input(receiver.url, 5));
    await new Promise((resolve) => setTimeout(resolve, 200));
    const closing = own.close();
    assert.match((await own.deliverAttempt(input(receiver.url, 6))).error ?? '', /shutting down/);
    release.open();
    assert.equal((await call).ok, true);
    await closing;
    assert.equal(own.thread, undefined);
  });

  it('unreadable certificate files stop the start, before any thread', () => {
    assert.throws(() => createThreadedOutbound({ ...config, mtlsCertFile: '/nonexistent/cert.pem', mtlsKeyFile: '/nonexistent/key.pem' }), OutboundConfigError);
  });
});
