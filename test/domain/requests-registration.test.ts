// needs: nothing
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { bodyHash, canonicalJson } from '../../src/domain/requests/idempotency.js';
import { decideRegistration, rewardValueOf } from '../../src/domain/requests/registration.js';
import type { Experience } from '../../src/domain/experiences/experience.js';

const experience = (patch: Partial<Experience> = {}): Experience => ({
  id: 'exp_1',
  accountId: 'acc_1',
  name: 'summer',
  title: 'Summer campaign',
  active: true,
  events: [],
  prizes: [
    { id: 'a', bucket: 'b', title: 'A', description: '', value: 10.25, quantity: 2, kind: 'coupon', stock: 3 },
    { id: 'b', bucket: 'b', title: 'B', description: '', value: 0.3, quantity: 1, kind: 'payment', stock: null },
  ],
  createdAt: 0,
  updatedAt: 0,
  ...patch,
});

describe('registration decision (pure)', () => {
  it('registers with rewardValue = Σ value × quantity rounded (20.5 + 0.3 = 20.8 → 21) and a snapshot of the experience', () => {
    const decision = decideRegistration({ accountActive: true, experienceName: 'summer', experience: experience(), event: null, data: { any: 'thing' } });
    assert.equal(decision.outcome, 'registered');
    assert.equal(decision.outcome === 'registered' && decision.rewardValue, 21);
    assert.deepEqual(decision.outcome === 'registered' && decision.snapshot.prizes.map((p) => p.id), ['a', 'b']);
  });

  it('rewardValue is absent when the reward is zero', () => {
    assert.equal(rewardValueOf([]), undefined);
    assert.equal(rewardValueOf([{ value: 0, quantity: 5 }]), undefined);
    assert.equal(rewardValueOf([{ value: 0.4, quantity: 1 }]), undefined, '0.4 rounds to 0: no reward');
    assert.equal(rewardValueOf([{ value: 0.5, quantity: 1 }]), 1);
  });

  const cases: Array<[string, Parameters<typeof decideRegistration>[0], string]> = [
    ['unknown experience', { accountActive: true, experienceName: 'nope', experience: undefined, event: null, data: undefined }, 'EXPERIENCE_NOT_FOUND'],
    ['inactive experience', { accountActive: true, experienceName: 'summer', experience: experience({ active: false }), event: null, data: undefined }, 'EXPERIENCE_INACTIVE'],
    ['event not listed', { accountActive: true, experienceName: 'summer', experience: experience({ events: ['buy'] }), event: 'sell', data: undefined }, 'EVENT_NOT_ALLOWED'],
    ['event missing where required', { accountActive: true, experienceName: 'summer', experience: experience({ events: ['buy'] }), event: null, data: undefined }, 'EVENT_NOT_ALLOWED'],
    ['data is an array', { accountActive: true, experienceName: 'summer', experience: experience(), event: null, data: [] }, 'INVALID_DATA'],
    ['data is null', { accountActive: true, experienceName: 'summer', experience: experience(), event: null, data: null }, 'INVALID_DATA'],
    ['data is a string', { accountActive: true, experienceName: 'summer', experience: experience(), event: null, data: 'x' }, 'INVALID_DATA'],
    // Checked in catalogue order: the experience comes before the data.
    ['inactive and bad data', { accountActive: true, experienceName: 'summer', experience: experience({ active: false }), event: null, data: 1 }, 'EXPERIENCE_INACTIVE'],
    // A deactivated account's requests are refused before anything else is looked at.
    ['an inactive account', { accountActive: false, experienceName: 'summer', experience: experience(), event: null, data: undefined }, 'ACCOUNT_INACTIVE'],
    ['an inactive account and an unknown experience', { accountActive: false, experienceName: 'nope', experience: undefined, event: null, data: 1 }, 'ACCOUNT_INACTIVE'],
  ];
  for (const [what, input, code] of cases) {
    it(`rejects ${what} with ${code} and a message`, () => {
      const decision = decideRegistration(input);
      assert.equal(decision.outcome, 'rejected');
      assert.equal(decision.outcome === 'rejected' && decision.errorCode, code);
      assert.ok(decision.outcome === 'rejected' && decision.message.length > 0);
    });
  }

  it('any listed event is allowed; no list allows every event', () => {
    assert.equal(decideRegistration({ accountActive: true, experienceName: 'summer', experience: experience({ events: ['buy', 'sell'] }), event: 'sell', data: undefined }).outcome, 'registered');
    assert.equal(decideRegistration({ accountActive: true, experienceName: 'summer', experience: experience(), event: 'whatever', data: undefined }).outcome, 'registered');
  });
});

describe('Idempotency-Key body hash (pure)', () => {
  it('ignores member order, keeps array order and values', () => {
    assert.equal(canonicalJson({ b: 1, a: { d: [2, 1], c: null } }), '{"a":{"c":null,"d":[2,1]},"b":1}');
    assert.equal(bodyHash({ a: 1, b: 2 }), bodyHash({ b: 2, a: 1 }));
    assert.notEqual(bodyHash({ a: [1, 2] }), bodyHash({ a: [2, 1] }));
    assert.notEqual(bodyHash({ a: 1 }), bodyHash({ a: '1' }));
  });
});
