// needs: nothing
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { routeNotification, type RoutableSubscription } from '../../src/domain/notifications/routing.js';

const sub = (id: string, experiences: string[], active = true): RoutableSubscription => ({ id, experiences, active });
const ids = (targets: ReturnType<typeof routeNotification>) => targets.map((t) => (t.kind === 'subscription' ? t.subscriptionId : t.url));

describe('routeNotification', () => {
  const request = { experience: 'summer' };

  it('a per-request URL wins over every subscription, per event', () => {
    const withUrls = { ...request, registeredCallbackUrl: 'https://r.example/reg', processedCallbackUrl: null };
    assert.deepEqual(routeNotification('registered-requests', withUrls, [sub('a', [])]), [{ kind: 'request-url', url: 'https://r.example/reg' }]);
    assert.deepEqual(ids(routeNotification('processed-requests', withUrls, [sub('a', [])])), ['a']);
  });

  it('subscriptions listing the experience win over account-wide ones; each active one gets a delivery', () => {
    const subs = [sub('wide', []), sub('exp1', ['summer', 'winter']), sub('exp2', ['summer']), sub('other', ['winter'])];
    assert.deepEqual(ids(routeNotification('registered-requests', request, subs)), ['exp1', 'exp2']);
  });

  it('when every subscription for the experience is inactive nothing is sent (the skip rule)', () => {
    const subs = [sub('wide', []), sub('skip', ['summer'], false)];
    assert.deepEqual(routeNotification('processed-requests', request, subs), []);
  });

  it('falls back to account-wide subscriptions, active ones only', () => {
    const subs = [sub('wide1', []), sub('wide2', [], false), sub('other', ['winter'])];
    assert.deepEqual(ids(routeNotification('registered-requests', request, subs)), ['wide1']);
  });

  it('no subscription at all: nothing to send', () => {
    assert.deepEqual(routeNotification('registered-requests', request, []), []);
  });
});
