// needs: nothing
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { afterAttempts, nextProbeInterval, saysDown, type Circuit, type CircuitObservation } from '../../src/domain/notifications/circuit-breaker.js';

/** The breaker's rules (docs/delivery.md, "Circuit breaker"), as pure transitions. */
const settings = { failures: 3, probeIntervalMs: 10_000, probeMaxIntervalMs: 60_000 };
const down = (id: string, statusCode: number | null = null): CircuitObservation => ({ notificationId: id, statusCode, error: statusCode === null ? 'connection refused by example.test' : null });
const answer = (id: string, statusCode = 200): CircuitObservation => ({ notificationId: id, statusCode, error: null });
const NOW = 1_000_000;

describe('circuit breaker rules', () => {
  it('counts no answer and 5xx as down; 2xx, 3xx and 4xx are answers', () => {
    assert.deepEqual([null, 500, 503, 599].map(saysDown), [true, true, true, true]);
    assert.deepEqual([200, 204, 301, 400, 404, 410, 429].map(saysDown), [false, false, false, false, false, false, false]);
  });

  it('opens at the threshold of failures in a row; an answer in between starts the count again, and a healthy endpoint keeps no circuit', () => {
    assert.deepEqual(afterAttempts(undefined, [answer('a')], settings, NOW), { circuit: undefined, change: null });
    const failing = afterAttempts(undefined, [down('a'), down('b', 502)], settings, NOW);
    assert.equal(failing.circuit?.state, 'failing');
    assert.equal(failing.circuit?.failures, 2);
    assert.equal(failing.circuit?.reason, 'HTTP 502');
    assert.deepEqual(afterAttempts(failing.circuit, [answer('c', 404)], settings, NOW), { circuit: undefined, change: null });
    // Two, an answer, then two: not three in a row.
    assert.equal(afterAttempts(failing.circuit, [answer('c'), down('d'), down('e')], settings, NOW).circuit?.state, 'failing');
    const opened = afterAttempts(failing.circuit, [down('c')], settings, NOW);
    assert.equal(opened.change, 'opened');
    assert.equal(opened.circuit?.state, 'open');
    assert.equal(opened.circuit?.openedAt, NOW);
    assert.equal(opened.circuit?.nextProbeAt, NOW + 10_000);
    assert.equal(opened.circuit?.reason, 'connection refused by example.test');
  });

  it('while open: failures that are not its probe change nothing but the count; a failed probe doubles the wait up to the longest', () => {
    const open = afterAttempts(undefined, [down('a'), down('b'), down('c')], settings, NOW).circuit!;
    const stray = afterAttempts(open, [down('x')], settings, NOW + 1);
    assert.equal(stray.change, null);
    assert.equal(stray.circuit?.nextProbeAt, open.nextProbeAt);
    let circuit: Circuit = { ...open, probeId: 'p1', probeUntil: NOW + 70_000 };
    const waits: number[] = [];
    for (let i = 0; i < 5; i++) {
      const at = NOW + 20_000 * (i + 1);
      circuit = afterAttempts({ ...circuit, probeId: `p${i}` }, [down(`p${i}`)], settings, at).circuit!;
      assert.equal(circuit.state, 'open');
      assert.equal(circuit.probeId, null);
      waits.push(circuit.nextProbeAt! - at);
    }
    assert.deepEqual(waits, [20_000, 40_000, 60_000, 60_000, 60_000]);
    assert.equal(circuit.probes, 5);
    assert.equal(nextProbeInterval(null, settings), 10_000);
  });

  it('the first answer closes it: draining what it held; failures after the answer count from zero and may open it again', () => {
    const open = afterAttempts(undefined, [down('a'), down('b'), down('c')], settings, NOW).circuit!;
    const closed = afterAttempts({ ...open, probeId: 'p' }, [answer('p', 403)], settings, NOW + 5);
    assert.equal(closed.change, 'closed');
    assert.equal(closed.circuit?.state, 'draining');
    assert.equal(closed.circuit?.failures, 0);
    assert.equal(closed.circuit?.probeId, null);
    const reopened = afterAttempts(closed.circuit, [down('d'), down('e'), down('f')], settings, NOW + 10);
    assert.equal(reopened.change, 'opened');
    assert.equal(reopened.circuit?.state, 'open');
  });

  it('with the breaker off (0 failures) nothing opens', () => {
    const off = { ...settings, failures: 0 };
    const result = afterAttempts(
      undefined,
      Array.from({ length: 50 }, (_, i) => down(`n${i}`)),
      off,
      NOW,
    );
    assert.equal(result.change, null);
    assert.notEqual(result.circuit?.state, 'open');
  });
});
