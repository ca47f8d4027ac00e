import assert from 'node:assert/strict';
import { Webhook } from 'standardwebhooks';
import { tenantWithExperience } from './experiences.js';
import type { RecordedRequest } from './receivers.js';
import { api, type TestApp } from './test-app.js';

/** Polls `check` until it returns a value (not undefined/false) or the deadline passes. */
export async function eventually<T>(check: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 15_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Verifies a received notification with the official standardwebhooks package; returns the parsed body. */
export function verifyWebhook(secret: string, request: RecordedRequest): Record<string, unknown> {
  const headers = {
    'webhook-id': String(request.headers['webhook-id']),
    'webhook-timestamp': String(request.headers['webhook-timestamp']),
    'webhook-signature': String(request.headers['webhook-signature']),
  };
  return new Webhook(secret).verify(request.body, headers) as Record<string, unknown>;
}

/**
 * A fresh account with an unlimited `summer` experience, and helpers bound to its token: subscribe
 * to registered-requests with a callback, send a request, and wait for the request's one
 * notification to end (succeeded or failed), answered with its attempts.
 */
export async function notificationTenant(t: TestApp) {
  const { token } = await tenantWithExperience(t, { prizes: [{ id: 'cpn', value: 10, stock: null }] });
  const subscribe = async (callback: Record<string, unknown>) => {
    const created = await api(t.url, 'POST', '/v2/subscriptions', { token, body: { event: 'registered-request', callback } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    return created.body as { _id: string; secret: string };
  };
  const send = async () => {
    const response = await api(t.url, 'POST', '/v2/requests', { token, body: { experience: 'summer' } });
    assert.equal(response.status, 202, JSON.stringify(response.body));
    return response.body.id as string;
  };
  const ended = async (requestId: string) => {
    const listed = await eventually(
      async () => {
        const data = (await api(t.url, 'GET', `/v2/notifications?requestId=${requestId}`, { token })).body.data;
        return data.length === 1 && data[0].status !== 'pending' && data[0];
      },
      15_000,
      `the notification of ${requestId}`,
    );
    const detail = await api(t.url, 'GET', `/v2/notifications/${listed.id}`, { token });
    assert.equal(detail.status, 200);
    return detail.body;
  };
  return { token, subscribe, send, ended };
}
