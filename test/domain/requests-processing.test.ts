// needs: nothing
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { allocateStock, prizeKey, type StockLevel } from '../../src/domain/requests/allocation.js';
import { buildProcessingResult } from '../../src/domain/requests/items.js';
import { processedPayload, registeredPayload } from '../../src/domain/requests/outcomes.js';
import type { ExperienceSnapshot } from '../../src/domain/requests/registration.js';
import { toRequestView, type RewardRequest } from '../../src/domain/requests/request.js';

const snapshot: ExperienceSnapshot = {
  id: 'exp_1',
  name: 'summer',
  title: 'Summer campaign',
  prizes: [
    { id: 'c', bucket: 'coupons', title: 'C', description: 'coupon', value: 10, quantity: 2, kind: 'coupon', stock: 1 },
    { id: 'p', bucket: 'cash', title: 'P', description: 'payment', value: 5.5, quantity: 1, kind: 'payment', stock: null },
    { id: 'm', bucket: 'merch', title: 'M', description: 'mug', value: 0, quantity: 1, kind: 'physical', stock: 1 },
  ],
};
const codes = { coupon: () => 'CODE-0001', paymentId: () => 'pay_1' };

describe('stock allocation for a batch (pure)', () => {
  it('hands the units left to the first requests, in order; unlimited always; missing prizes unavailable', () => {
    const stock = new Map<string, StockLevel>([
      [prizeKey('exp_1', 'c'), 2],
      [prizeKey('exp_1', 'p'), null],
      // 'm' was removed from the experience after registration.
    ]);
    const { allocations, taken } = allocateStock([snapshot, snapshot, snapshot], stock);
    assert.deepEqual(allocations, [
      ['taken', 'taken', 'unavailable'],
      ['taken', 'taken', 'unavailable'],
      ['out-of-stock', 'taken', 'unavailable'],
    ]);
    assert.deepEqual([...taken], [[prizeKey('exp_1', 'c'), 2]]);
  });

  it('zero or negative stock is out of stock and takes nothing', () => {
    const { allocations, taken } = allocateStock(
      [snapshot],
      new Map([
        [prizeKey('exp_1', 'c'), 0],
        [prizeKey('exp_1', 'p'), -1],
        [prizeKey('exp_1', 'm'), 5],
      ]),
    );
    assert.deepEqual(allocations, [['out-of-stock', 'out-of-stock', 'taken']]);
    assert.deepEqual([...taken], [[prizeKey('exp_1', 'm'), 1]]);
  });

  it('a request of an inactive account takes nothing: the stock goes to the next request', () => {
    const { allocations, taken } = allocateStock(
      [snapshot, snapshot],
      new Map([
        [prizeKey('exp_1', 'c'), 1],
        [prizeKey('exp_1', 'p'), null],
      ]),
      [false, true],
    );
    assert.deepEqual(allocations, [
      ['account-inactive', 'account-inactive', 'account-inactive'],
      ['taken', 'taken', 'unavailable'],
    ]);
    assert.deepEqual([...taken], [[prizeKey('exp_1', 'c'), 1]]);
  });
});

describe('delivered and canceled items (pure)', () => {
  const concludedAt = Date.UTC(2025, 0, 2, 3, 4, 5, 6);

  it('builds every seed field; rewardValue counts delivered only; digital deliveries become events', () => {
    const result = buildProcessingResult({ requestId: 'req_1', event: 'buy', experience: snapshot, allocations: ['taken', 'taken', 'out-of-stock'], concludedAt, codes });
    assert.deepEqual(result.delivered, [
      {
        value: 10,
        quantity: 2,
        name: 'summer',
        title: 'Summer campaign',
        deliveryDetail: {
          timestamp: '2025-01-02T03:04:05.006Z',
          info: { name: 'delivered', bucket: 'coupons', coupon: 'CODE-0001', paymentId: '', requestId: 'req_1', triggerId: 'buy', rewardId: 'c', description: 'coupon' },
          forwarded: false,
        },
      },
      {
        value: 5.5,
        quantity: 1,
        name: 'summer',
        title: 'Summer campaign',
        deliveryDetail: {
          timestamp: '2025-01-02T03:04:05.006Z',
          info: { name: 'delivered', bucket: 'cash', coupon: '', paymentId: 'pay_1', requestId: 'req_1', triggerId: 'buy', rewardId: 'p', description: 'payment' },
          forwarded: false,
        },
      },
    ]);
    assert.deepEqual(result.canceled, [
      {
        value: 0,
        quantity: 1,
        priceless: true,
        name: 'summer',
        title: 'Summer campaign',
        deliveryDetail: { timestamp: '2025-01-02T03:04:05.006Z', info: { name: 'canceled', reason: 'out of stock', reasonCode: 1, description: 'mug', paymentId: '' }, forwarded: false },
      },
    ]);
    assert.equal(result.rewardValue, 26, '10 × 2 + 5.5 = 25.5 → 26');
    assert.deepEqual(
      result.digitalDeliveries.map((d) => d.refId),
      ['CODE-0001', 'pay_1'],
    );
  });

  it('a physical prize is forwarded to the partner; a removed prize is canceled with reasonCode 2', () => {
    const result = buildProcessingResult({ requestId: 'req_1', event: null, experience: snapshot, allocations: ['unavailable', 'out-of-stock', 'taken'], concludedAt, codes });
    assert.equal(result.delivered[0]!.deliveryDetail.forwarded, true);
    assert.equal(result.delivered[0]!.deliveryDetail.info.triggerId, '');
    assert.deepEqual(
      result.canceled.map((c) => [c.deliveryDetail.info.reasonCode, c.priceless]),
      [
        [2, false],
        [1, false],
      ],
    );
    assert.equal(result.rewardValue, undefined, 'only a zero-value prize delivered: no reward');
    assert.deepEqual(result.digitalDeliveries, []);
  });

  it('an inactive account: every prize canceled with reasonCode 3, nothing delivered, no reward', () => {
    const result = buildProcessingResult({ requestId: 'req_1', event: null, experience: snapshot, allocations: ['account-inactive', 'account-inactive', 'account-inactive'], concludedAt, codes });
    assert.deepEqual(result.delivered, []);
    assert.deepEqual(
      result.canceled.map((c) => [c.deliveryDetail.info.reasonCode, c.deliveryDetail.info.reason]),
      [
        [3, 'account inactive'],
        [3, 'account inactive'],
        [3, 'account inactive'],
      ],
    );
    assert.equal(result.rewardValue, undefined);
    assert.deepEqual(result.digitalDeliveries, []);
  });
});

describe('notification payloads and the request view (pure)', () => {
  const request: RewardRequest = {
    id: 'req_1',
    accountId: 'acc_1',
    experience: 'summer',
    event: null,
    data: undefined,
    registeredCallbackUrl: null,
    processedCallbackUrl: null,
    status: 'rejected',
    rewardValue: null,
    errorCode: 'EXPERIENCE_INACTIVE',
    message: 'experience "summer" is not active',
    delivered: null,
    canceled: null,
    createdAt: 0,
    updatedAt: 1000,
    registeredAt: 1000,
    concludedAt: null,
  };

  it('registered-requests carries exactly id, rewardValue when > 0, errorCode and message on error', () => {
    assert.deepEqual(registeredPayload(request), { id: 'req_1', errorCode: 'EXPERIENCE_INACTIVE', message: 'experience "summer" is not active' });
    assert.deepEqual(registeredPayload({ ...request, status: 'registered', errorCode: null, message: null, rewardValue: 0 }), { id: 'req_1' });
    assert.deepEqual(registeredPayload({ ...request, status: 'registered', errorCode: null, message: null, rewardValue: 7 }), { id: 'req_1', rewardValue: 7 });
  });

  it('processed-requests carries exactly id, rewardValue, concluded, delivered, canceled', () => {
    const processed = { ...request, status: 'processed' as const, errorCode: null, message: null, rewardValue: 3, delivered: [], canceled: [], concludedAt: Date.UTC(2025, 5, 1) };
    assert.deepEqual(processedPayload(processed), { id: 'req_1', rewardValue: 3, concluded: '2025-06-01T00:00:00.000Z', delivered: [], canceled: [] });
  });

  it('the GET view leaves out members without a value', () => {
    assert.deepEqual(toRequestView(request), {
      id: 'req_1',
      status: 'rejected',
      experience: 'summer',
      errorCode: 'EXPERIENCE_INACTIVE',
      message: 'experience "summer" is not active',
      createdAt: '1970-01-01T00:00:00.000Z',
      updatedAt: '1970-01-01T00:00:01.000Z',
      registeredAt: '1970-01-01T00:00:01.000Z',
    });
  });
});
