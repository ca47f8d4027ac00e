import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createConcurrencyLimiter } from '../../src/worker/outbound/concurrency-limiter.js';
import { gate } from '../support/receivers.js';

describe('concurrency limiter', () => {
  it('holds a host at its limit but lets other hosts through', async () => {
    const limiter = createConcurrencyLimiter({ overall: 4, perHost: 2 });
    const slow = gate();
    const started: string[] = [];
    const slowTasks = [1, 2, 3].map((n) => limiter.run('slow.example', async () => (started.push(`slow${n}`), slow.wait)));
    const fast = await limiter.run('fast.example', async () => (started.push('fast'), 'done'));
    assert.equal(fast, 'done');
    assert.deepEqual(started, ['slow1', 'slow2', 'fast']);
    assert.equal(limiter.stats().waiting, 1);
    slow.open();
    await Promise.all(slowTasks);
    assert.deepEqual(started, ['slow1', 'slow2', 'fast', 'slow3']);
    assert.deepEqual(limiter.stats(), { active: 0, waiting: 0, activeByHost: {} });
  });

  it('when a slot frees, a waiter of another host overtakes one whose host is still at its limit', async () => {
    const limiter = createConcurrencyLimiter({ overall: 3, perHost: 2 });
    const slowA = gate();
    const holdB = gate();
    const started: string[] = [];
    const run = (host: string, wait: Promise<void>) => limiter.run(host, async () => (started.push(host), wait));
    const a = [run('a', slowA.wait), run('a', slowA.wait)];
    const b = run('b', holdB.wait);
    const a3 = run('a', slowA.wait); // overall full: queued first
    const c = run('c', Promise.resolve()); // overall full: queued behind a3
    await new Promise(setImmediate); // tasks start on a later tick
    assert.deepEqual(started, ['a', 'a', 'b']);
    holdB.open();
    await b;
    await c; // would hang here if the queue stopped at a3, whose host is still at its limit
    assert.deepEqual(started, ['a', 'a', 'b', 'c']);
    slowA.open();
    await Promise.all([...a, a3]);
    assert.deepEqual(started, ['a', 'a', 'b', 'c', 'a']);
  });

  it('enforces the overall limit across hosts, FIFO', async () => {
    const limiter = createConcurrencyLimiter({ overall: 2, perHost: 2 });
    const hold = gate();
    let running = 0;
    let peak = 0;
    const order: string[] = [];
    const task = (name: string) => async () => {
      running++;
      peak = Math.max(peak, running);
      order.push(name);
      await hold.wait;
      running--;
    };
    const all = ['a', 'b', 'c', 'd'].map((host) => limiter.run(host, task(host)));
    assert.equal(limiter.stats().active, 2);
    hold.open();
    await Promise.all(all);
    assert.equal(peak, 2);
    assert.deepEqual(order, ['a', 'b', 'c', 'd']);
  });

  it('serves each host in arrival order, and hosts by their oldest waiter', async () => {
    const limiter = createConcurrencyLimiter({ overall: 2, perHost: 1 });
    const gates = new Map<string, ReturnType<typeof gate>>();
    const started: string[] = [];
    const run = (host: string, name: string) => {
      const g = gate();
      gates.set(name, g);
      return limiter.run(host, async () => (started.push(name), g.wait));
    };
    const all = [run('a', 'a1'), run('b', 'b1'), run('a', 'a2'), run('a', 'a3'), run('b', 'b2'), run('c', 'c1')];
    await new Promise(setImmediate);
    assert.deepEqual(started, ['a1', 'b1']);
    assert.equal(limiter.stats().waiting, 4);
    gates.get('b1')!.open(); // b's slot frees: b2 is b's next, but a2 (still blocked by a1) arrived before it
    await new Promise(setImmediate);
    assert.deepEqual(started, ['a1', 'b1', 'b2']);
    gates.get('a1')!.open();
    await new Promise(setImmediate);
    assert.deepEqual(started, ['a1', 'b1', 'b2', 'a2']);
    gates.get('b2')!.open(); // an overall slot frees: c1 is the only host under its limit
    await new Promise(setImmediate);
    assert.deepEqual(started, ['a1', 'b1', 'b2', 'a2', 'c1']);
    for (const g of gates.values()) g.open();
    await Promise.all(all);
    assert.deepEqual(started, ['a1', 'b1', 'b2', 'a2', 'c1', 'a3']);
    assert.deepEqual(limiter.stats(), { active: 0, waiting: 0, activeByHost: {} });
  });

  it('releases the slot when a task fails', async () => {
    const limiter = createConcurrencyLimiter({ overall: 1, perHost: 1 });
    await assert.rejects(limiter.run('h', async () => Promise.reject(new Error('boom'))), /boom/);
    assert.equal(await limiter.run('h', async () => 42), 42);
  });
});
