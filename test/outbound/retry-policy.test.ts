// needs: nothing
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decideAfterAttempt, MAX_RETRY_AFTER_MS, parseRetryAfter, RETRY_JITTER } from '../../src/domain/notifications/retry-policy.js';

const now = new Date('2024-05-01T12:00:00.000Z');
const HOUR = 3_600_000;
const base = { attempt: 1, maxAttempts: 5, retryIntervalMs: 3 * HOUR, now };
const at = (ms: number) => ({ kind: 'retry', at: new Date(now.getTime() + ms) });

describe('retry policy', () => {
  it('any 2xx succeeds, even on the last attempt', () => {
    for (const statusCode of [200, 201, 202, 204, 299]) {
      assert.deepEqual(decideAfterAttempt({ ...base, statusCode }), { kind: 'succeeded' });
      assert.deepEqual(decideAfterAttempt({ ...base, attempt: 5, statusCode }), { kind: 'succeeded' });
    }
  });

  it('3xx, 4xx, 5xx and no answer are failures retried RETRY_INTERVAL later', () => {
    for (const statusCode of [undefined, 199, 301, 302, 304, 400, 401, 404, 410, 500, 502, 504]) {
      assert.deepEqual(decideAfterAttempt({ ...base, statusCode }), at(3 * HOUR), String(statusCode));
    }
  });

  it('fails after RETRY_MAX_ATTEMPTS attempts in total', () => {
    assert.deepEqual(decideAfterAttempt({ ...base, attempt: 4, statusCode: 500 }), at(3 * HOUR));
    assert.deepEqual(decideAfterAttempt({ ...base, attempt: 5, statusCode: 500 }), { kind: 'failed' });
    assert.deepEqual(decideAfterAttempt({ ...base, attempt: 1, maxAttempts: 1 }), { kind: 'failed' });
    assert.deepEqual(decideAfterAttempt({ ...base, attempt: 5, statusCode: 429, retryAfter: '60' }), { kind: 'failed' });
  });

  it('a longer Retry-After of a 429 or 503 postpones the next attempt, capped at 24 h', () => {
    assert.deepEqual(decideAfterAttempt({ ...base, statusCode: 429, retryAfter: String(5 * 3600) }), at(5 * HOUR));
    assert.deepEqual(decideAfterAttempt({ ...base, statusCode: 503, retryAfter: 'Wed, 01 May 2024 20:00:00 GMT' }), at(8 * HOUR));
    assert.deepEqual(decideAfterAttempt({ ...base, statusCode: 429, retryAfter: String(7 * 24 * 3600) }), at(MAX_RETRY_AFTER_MS));
  });

  it('a shorter Retry-After, or one on another status, does not bring the attempt forward', () => {
    assert.deepEqual(decideAfterAttempt({ ...base, statusCode: 429, retryAfter: '10' }), at(3 * HOUR));
    assert.deepEqual(decideAfterAttempt({ ...base, statusCode: 500, retryAfter: String(10 * 3600) }), at(3 * HOUR));
    assert.deepEqual(decideAfterAttempt({ ...base, statusCode: 503, retryAfter: 'soon' }), at(3 * HOUR));
  });

  it('spreads retries by ±20 % around RETRY_INTERVAL; the number of attempts does not change', () => {
    assert.equal(RETRY_JITTER, 0.2);
    assert.deepEqual(decideAfterAttempt({ ...base, statusCode: 500, jitter: 0 }), at(0.8 * 3 * HOUR));
    assert.deepEqual(decideAfterAttempt({ ...base, statusCode: 500, jitter: 0.5 }), at(3 * HOUR));
    assert.deepEqual(decideAfterAttempt({ ...base, statusCode: 500, jitter: 0.75 }), at(1.1 * 3 * HOUR));
    const delays = Array.from({ length: 1000 }, () => {
      const decision = decideAfterAttempt({ ...base, statusCode: 500, jitter: Math.random() });
      assert.equal(decision.kind, 'retry');
      return (decision as { at: Date }).at.getTime() - now.getTime();
    });
    assert.ok(Math.min(...delays) >= 0.8 * 3 * HOUR && Math.max(...delays) <= 1.2 * 3 * HOUR);
    // Spread, not a herd: the draws cover the range (ten bins of 2 % each all hit).
    assert.equal(new Set(delays.map((delay) => Math.floor(((delay / (3 * HOUR) - 0.8) / 0.4) * 10))).size, 10);
    assert.deepEqual(decideAfterAttempt({ ...base, attempt: 5, statusCode: 500, jitter: 0 }), { kind: 'failed' });
  });

  it('a Retry-After stays a lower bound under jitter', () => {
    assert.deepEqual(decideAfterAttempt({ ...base, statusCode: 429, retryAfter: String(3 * 3600), jitter: 0 }), at(3 * HOUR));
    assert.deepEqual(decideAfterAttempt({ ...base, statusCode: 429, retryAfter: String(3 * 3600), jitter: 0.99 }), at(Math.round(3 * HOUR * (1 + 0.2 * 0.98))));
  });

  it('parses Retry-After as seconds or an HTTP date', () => {
    assert.equal(parseRetryAfter('120', now), 120_000);
    assert.equal(parseRetryAfter(' 0 ', now), 0);
    assert.equal(parseRetryAfter('Wed, 01 May 2024 12:01:00 GMT', now), 60_000);
    assert.equal(parseRetryAfter('Wed, 01 May 2024 11:00:00 GMT', now), 0);
    assert.equal(parseRetryAfter(undefined, now), undefined);
    assert.equal(parseRetryAfter('-5', now), undefined);
    assert.equal(parseRetryAfter('1.5', now), undefined);
    assert.equal(parseRetryAfter('2024-05-01', now), undefined);
    assert.equal(parseRetryAfter('Wed, garbage', now), undefined);
  });
});
