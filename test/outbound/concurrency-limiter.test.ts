// needs: nothing
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createConcurrencyLimiter, type ConcurrencyLimits } from '../../src/worker/outbound/concurrency-limiter.js';
import { gate } from '../support/receivers.js';

/** A limiter and calls whose end the test decides: `start(account, address, name)` queues one, `end(name)` ends it. */
function harness(limits: ConcurrencyLimits) {
  const limiter = createConcurrencyLimiter(limits);
  const gates = new Map<string, ReturnType<typeof gate>>();
  const started: string[] = [];
  const settled: Promise<unknown>[] = [];
  return {
    limiter,
    started,
    start(account: string, address: string, name: string) {
      const g = gate();
      gates.set(name, g);
      settled.push(limiter.run({ account, address }, async () => (started.push(name), g.wait)));
    },
    async end(...names: string[]) {
      for (const name of names) gates.get(name)!.open();
      await new Promise(setImmediate);
    },
    async endAll() {
      for (const g of gates.values()) g.open();
      await Promise.all(settled);
    },
  };
}

const tick = () => new Promise(setImmediate);

describe('concurrency limiter: fair between accounts, capped per account and address', () => {
  it('an account alone uses every slot: no share applies while no one else waits', async () => {
    const h = harness({ overall: 4, perAddress: 4, reserve: 0, lightBelow: 1 });
    for (const n of [1, 2, 3, 4, 5]) h.start('a', `10.0.0.${n}`, `a${n}`);
    await tick();
    assert.deepEqual(h.started, ['a1', 'a2', 'a3', 'a4']);
    assert.deepEqual(h.limiter.stats(), { active: 4, waiting: 1, activeByAccount: { a: 4 } });
    await h.endAll();
    assert.deepEqual(h.limiter.stats(), { active: 0, waiting: 0, activeByAccount: {} });
  });

  it('a light account starts at once in the reserve while another holds every slot with calls that hang', async () => {
    const h = harness({ overall: 4, perAddress: 4, reserve: 2, lightBelow: 2 });
    for (const n of [1, 2, 3, 4, 5, 6]) h.start('flood', `10.0.0.${n}`, `f${n}`);
    await tick();
    assert.deepEqual(h.started, ['f1', 'f2', 'f3', 'f4']);
    h.start('quiet', '10.9.9.9', 'q1');
    h.start('quiet', '10.9.9.9', 'q2');
    h.start('quiet', '10.9.9.9', 'q3');
    await tick();
    // Two reserve slots, both for the light account; its third call is no longer light: it waits.
    assert.deepEqual(h.started, ['f1', 'f2', 'f3', 'f4', 'q1', 'q2']);
    assert.deepEqual(h.limiter.stats(), { active: 6, waiting: 3, activeByAccount: { flood: 4, quiet: 2 } });
    await h.endAll();
  });

  it('a freed slot goes to the waiting account holding fewest, so a flood shrinks to a fair share', async () => {
    const h = harness({ overall: 4, perAddress: 4, reserve: 0, lightBelow: 1 });
    for (const n of [1, 2, 3, 4, 5, 6]) h.start('a', '10.0.0.1', `a${n}`);
    h.start('b', '10.0.0.2', 'b1');
    h.start('b', '10.0.0.2', 'b2');
    h.start('b', '10.0.0.2', 'b3');
    await tick();
    assert.deepEqual(h.started, ['a1', 'a2', 'a3', 'a4']);
    // a5 waited longer than b1, but b holds none: b goes first, until both hold two.
    await h.end('a1');
    await h.end('a2');
    assert.deepEqual(h.started.slice(4), ['b1', 'b2']);
    await h.end('a3'); // a holds fewer now

    assert.deepEqual(h.started.slice(6), ['a5']);
    await h.end('b1');
    assert.deepEqual(h.started.slice(7), ['b3']);
    await h.endAll();
    assert.deepEqual(h.started.slice(8), ['a6']);
  });

  it('between accounts holding as many, the oldest waiter goes first', async () => {
    const h = harness({ overall: 3, perAddress: 3, reserve: 0, lightBelow: 1 });
    for (const [account, name] of [
      ['a', 'a1'],
      ['b', 'b1'],
      ['c', 'c1'],
      ['b', 'b2'],
      ['a', 'a2'],
    ])
      h.start(account!, '10.0.0.1', name!);
    await h.end('c1');
    assert.deepEqual(h.started, ['a1', 'b1', 'c1', 'b2']);
    await h.endAll();
  });

  it('caps one account per resolved address; its calls to other addresses go past a waiter held by that cap', async () => {
    const h = harness({ overall: 8, perAddress: 2, reserve: 0, lightBelow: 1 });
    h.start('a', '10.0.0.1', 'slow1');
    h.start('a', '10.0.0.1', 'slow2');
    h.start('a', '10.0.0.1', 'slow3');
    h.start('a', '10.0.0.2', 'other');
    // Another account at the same address has a cap of its own.
    h.start('b', '10.0.0.1', 'b1');
    await tick();
    assert.deepEqual(h.started, ['slow1', 'slow2', 'other', 'b1']);
    await h.end('slow1');
    assert.deepEqual(h.started.slice(4), ['slow3']);
    await h.endAll();
  });

  it('keeps arrival order within an account', async () => {
    const h = harness({ overall: 1, perAddress: 1, reserve: 0, lightBelow: 1 });
    for (const name of ['x1', 'x2', 'x3']) h.start('a', '10.0.0.1', name);
    await h.endAll();
    assert.deepEqual(h.started, ['x1', 'x2', 'x3']);
  });

  it('releases the slot when a task fails', async () => {
    const limiter = createConcurrencyLimiter({ overall: 1, perAddress: 1, reserve: 0, lightBelow: 1 });
    await assert.rejects(
      limiter.run({ account: 'a', address: 'h' }, async () => Promise.reject(new Error('boom'))),
      /boom/,
    );
    assert.equal(await limiter.run({ account: 'a', address: 'h' }, async () => 42), 42);
  });
});
