import { Webhook } from 'standardwebhooks';
import type { RecordedRequest } from './receivers.js';

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
