import { setTimeout as sleep } from 'node:timers/promises';
import assert from 'node:assert/strict';
import { api } from './test-app.js';

/**
 * Polls GET /v2/requests/{id} until its status is one of `statuses`. The deadline only bounds a
 * broken run; nothing asserts on how long it took.
 */
export async function waitForStatus(base: string, token: string, id: string, statuses: string[], deadlineMs = 30_000): Promise<any> {
  const until = Date.now() + deadlineMs;
  for (;;) {
    const response = await api(base, 'GET', `/v2/requests/${id}`, { token });
    if (response.status !== 200) throw new Error(`GET request ${id}: ${response.status} ${JSON.stringify(response.body)}`);
    if (statuses.includes(response.body.status)) return response.body;
    if (Date.now() > until) throw new Error(`request ${id} stayed ${response.body.status}, expected ${statuses.join('|')}`);
    await sleep(20);
  }
}

/** POSTs `count` reward requests for the `summer` experience, `parallel` at a time; returns their ids. */
export async function sendRequests(url: string, token: string, count: number, parallel = 16): Promise<string[]> {
  const ids: string[] = [];
  let next = 0;
  const sender = async () => {
    while (next < count) {
      next += 1;
      const response = await api(url, 'POST', '/v2/requests', { token, body: { experience: 'summer', event: 'purchase' } });
      assert.equal(response.status, 202, JSON.stringify(response.body));
      ids.push(response.body.id);
    }
  };
  await Promise.all(Array.from({ length: parallel }, sender));
  return ids;
}
