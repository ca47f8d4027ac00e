// needs: nothing
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Batcher } from '../src/batcher.js';

/** The one batching primitive (src/batcher.ts): which failures it isolates item by item, and what liveness reads of it. */
describe('Batcher', () => {
  /** A batcher whose run fails a batch holding `bad`, with `error`, and records every batch it ran. */
  function batcher(error: Error, bad = 'bad') {
    const runs: string[][] = [];
    const b = new Batcher<string, string>({
      gather: 'microtask',
      maxBatch: 10,
      isolateFailures: (failure) => (failure as Error).message !== 'the database cannot serve',
      run: async (items) => {
        runs.push(items);
        if (items.includes(bad)) throw error;
        return items.map((item) => item.toUpperCase());
      },
    });
    return { b, runs };
  }

  it('a failure one item may have caused is run again item by item: the others succeed, only that one fails', async () => {
    const { b, runs } = batcher(new Error('constraint'));
    const results = await Promise.allSettled(['a', 'bad', 'c'].map((item) => b.submit(item)));
    assert.deepEqual(
      results.map((r) => r.status),
      ['fulfilled', 'rejected', 'fulfilled'],
    );
    assert.deepEqual(runs, [['a', 'bad', 'c'], ['a'], ['bad'], ['c']]);
  });

  it('a failure no item caused fails the whole batch once, not once per item', async () => {
    const { b, runs } = batcher(new Error('the database cannot serve'));
    const results = await Promise.allSettled(['a', 'bad', 'c'].map((item) => b.submit(item)));
    assert.deepEqual(
      results.map((r) => r.status),
      ['rejected', 'rejected', 'rejected'],
    );
    assert.deepEqual(runs, [['a', 'bad', 'c']]);
  });

  it('busySince says when the batch running now began, and nothing while none runs', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const b = new Batcher<number, number>({ gather: 'microtask', maxBatch: 10, run: async (items) => (await held, items) });
    assert.equal(b.busySince(), undefined);
    const before = Date.now();
    const pending = b.submit(1);
    await new Promise((resolve) => setImmediate(resolve));
    const since = b.busySince();
    assert.ok(since !== undefined && since >= before && since <= Date.now());
    release();
    await pending;
    assert.equal(b.busySince(), undefined);
  });
});
