// needs: nothing
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  EVENT_ALIASES,
  EVENTS,
  isOperationalEvent,
  isRequestEvent,
  NOTIFICATION_EVENT_OF,
  NOTIFICATION_EVENTS,
  REQUEST_EVENTS,
  SUBSCRIPTION_EVENT_OF,
  SUBSCRIPTION_EVENTS,
} from '../../src/domain/notifications/events.js';
import { ACCEPTED_EVENT_NAMES, normalizeEvent } from '../../src/domain/subscriptions/validation.js';

describe('the notification events (domain/notifications/events.ts)', () => {
  it('names every event once in each spelling', () => {
    assert.equal(new Set(NOTIFICATION_EVENTS).size, EVENTS.length);
    assert.equal(new Set(SUBSCRIPTION_EVENTS).size, EVENTS.length);
    assert.deepEqual(NOTIFICATION_EVENTS, ['registered-requests', 'processed-requests', 'disabled-subscriptions', 'failed-notifications', 'endpoint-circuits']);
    assert.deepEqual(REQUEST_EVENTS, ['registered-requests', 'processed-requests']);
  });

  it('the singular and plural maps are inverse of each other', () => {
    assert.deepEqual(Object.keys(SUBSCRIPTION_EVENT_OF), [...NOTIFICATION_EVENTS]);
    assert.deepEqual(Object.keys(NOTIFICATION_EVENT_OF), [...SUBSCRIPTION_EVENTS]);
    for (const event of NOTIFICATION_EVENTS) assert.equal(NOTIFICATION_EVENT_OF[SUBSCRIPTION_EVENT_OF[event]], event);
    for (const event of SUBSCRIPTION_EVENTS) assert.equal(SUBSCRIPTION_EVENT_OF[NOTIFICATION_EVENT_OF[event]], event);
  });

  it('the singular is the plural without its final s (the console derives one from the other)', () => {
    for (const { notification, subscription } of EVENTS) assert.equal(`${subscription}s`, notification);
  });

  it('input accepts both spellings of every event, each to the singular, and nothing else', () => {
    for (const { notification, subscription } of EVENTS) {
      assert.equal(normalizeEvent(subscription), subscription);
      assert.equal(normalizeEvent(notification), subscription);
    }
    assert.equal(EVENT_ALIASES.size, 2 * EVENTS.length);
    assert.deepEqual(ACCEPTED_EVENT_NAMES, [
      'registered-request',
      'registered-requests',
      'processed-request',
      'processed-requests',
      'disabled-subscription',
      'disabled-subscriptions',
      'failed-notification',
      'failed-notifications',
      'endpoint-circuit',
      'endpoint-circuits',
    ]);
    for (const name of ['Registered-Request', 'registered', '', 'constructor', 'toString', '__proto__']) assert.equal(normalizeEvent(name), undefined, name);
  });

  it('tells request events from operational ones in either spelling', () => {
    assert.deepEqual(NOTIFICATION_EVENTS.filter(isRequestEvent), REQUEST_EVENTS);
    assert.deepEqual(SUBSCRIPTION_EVENTS.filter(isOperationalEvent), ['disabled-subscription', 'failed-notification', 'endpoint-circuit']);
    for (const { notification, subscription, kind } of EVENTS) {
      assert.equal(isRequestEvent(notification), kind === 'request');
      assert.equal(isOperationalEvent(subscription), kind === 'operational');
    }
  });
});
