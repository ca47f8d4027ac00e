import { createHmac } from 'node:crypto';

/**
 * Standard Webhooks signing (https://www.standardwebhooks.com): HMAC-SHA256 over
 * `${msgId}.${timestamp}.${body}` keyed with the base64 bytes of a `whsec_…` secret.
 * Pure: no clock, no I/O. Pinned by the spec's test vector in test/outbound/signing.test.ts.
 */

const SECRET_PREFIX = 'whsec_';
/** The spec recommends 24–64 byte keys; shorter keys are a configuration bug, not a choice. */
const MIN_SECRET_BYTES = 16;

export interface WebhookSignatureInput {
  /** Stable across retries so the receiver can de-duplicate (`webhook-id`). */
  msgId: string;
  /** Unix time in seconds of this attempt (`webhook-timestamp`). */
  timestamp: number;
  /** The exact bytes sent; signing a re-serialised copy would break verification. */
  body: string;
  /** Every secret that may sign now (during a 24 h rotation grace period: the new and the old). */
  secrets: readonly string[];
}

export interface WebhookSignatureHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

export class SigningSecretError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SigningSecretError';
  }
}

function decodeSigningSecret(secret: string): Buffer {
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded)) throw new SigningSecretError('signing secret is not base64 (expected whsec_<base64>)');
  const key = Buffer.from(encoded, 'base64');
  if (key.length < MIN_SECRET_BYTES) throw new SigningSecretError(`signing secret must decode to at least ${MIN_SECRET_BYTES} bytes`);
  return key;
}

/** One `v1,<base64>` signature per secret, space separated; a receiver accepts any that matches. */
export function signWebhook({ msgId, timestamp, body, secrets }: WebhookSignatureInput): string {
  if (secrets.length === 0) throw new SigningSecretError('at least one signing secret is required');
  if (!Number.isInteger(timestamp) || timestamp < 0) throw new SigningSecretError('timestamp must be whole seconds');
  // msgId and timestamp are part of the signed content; a "." inside msgId would make it ambiguous.
  if (msgId.includes('.') || msgId.length === 0) throw new SigningSecretError('msgId must be non-empty and contain no "."');
  const content = `${msgId}.${timestamp}.${body}`;
  return [...new Set(secrets)].map((secret) => `v1,${createHmac('sha256', decodeSigningSecret(secret)).update(content, 'utf8').digest('base64')}`).join(' ');
}

export function buildWebhookHeaders(input: WebhookSignatureInput): WebhookSignatureHeaders {
  return {
    'webhook-id': input.msgId,
    'webhook-timestamp': String(input.timestamp),
    'webhook-signature': signWebhook(input),
  };
}
