/**
 * What happens after one delivery attempt (PRODUCT.md §7). Pure: the caller passes the clock.
 *
 * - Success is any 2xx. Everything else is a failure: 3xx (redirects are never followed), 4xx,
 *   5xx, and no response at all (timeout, connection or TLS error → `statusCode` undefined).
 * - The first attempt is immediate; each later one comes `retryIntervalMs` ± 20 % after the
 *   failure (RETRY_JITTER: the retries of an outage's backlog come back spread, not as one herd),
 *   or later when a 429/503 carries a longer `Retry-After`, which stays a lower bound. Retry-After
 *   is capped at 24 h so a receiver cannot park a notification forever.
 * - After `maxAttempts` attempts in total (the first included) the notification is failed.
 * - A manual retry's attempt (POST /notifications/{id}/retry) is an extra one: it uses none of the
 *   `maxAttempts` and does not move the schedule. If it fails, a pending delivery goes back to its
 *   automatic attempt when that was due (now, if that time has passed), and one that had ended
 *   ends failed again (docs/delivery.md, "Manual retry").
 */

export const MAX_RETRY_AFTER_MS = 24 * 3_600_000;

/** Retries are spread over RETRY_INTERVAL × (1 ± RETRY_JITTER). */
export const RETRY_JITTER = 0.2;

export type RetryDecision = { kind: 'succeeded' } | { kind: 'retry'; at: Date } | { kind: 'failed' };

export interface AttemptOutcome {
  /** 1 for the first automatic attempt; attempts made by manual retries are not counted. */
  attempt: number;
  maxAttempts: number;
  retryIntervalMs: number;
  /** HTTP status of the callback's answer; undefined when there was none. */
  statusCode?: number;
  /** The raw `Retry-After` header of the answer, if any. */
  retryAfter?: string;
  now: Date;
  /** A uniform draw in [0, 1) that places the retry within the jitter (the caller's Math.random()); 0.5, or none, is the interval itself. */
  jitter?: number;
  /**
   * A manual retry's attempt: `resumeAt` is when the delivery's next automatic attempt was due
   * before the retry, or null when it had ended (this attempt is its only one).
   */
  manual?: { resumeAt: Date | null };
}

function isSuccessStatus(statusCode: number | undefined): boolean {
  return statusCode !== undefined && statusCode >= 200 && statusCode <= 299;
}

/** Retry-After is honoured only where HTTP gives it that meaning for a retry: 429 and 503. */
export const RETRY_AFTER_STATUSES: readonly number[] = [429, 503];

function honoursRetryAfter(statusCode: number | undefined): boolean {
  return statusCode !== undefined && RETRY_AFTER_STATUSES.includes(statusCode);
}

/**
 * `Retry-After` as a delay in ms from `now` (RFC 9110 §10.2.3): delay-seconds or an HTTP-date.
 * Undefined when absent or unparseable; a date in the past is a delay of 0.
 */
export function parseRetryAfter(value: string | undefined, now: Date): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  // Only accept things that look like an HTTP-date; Date.parse accepts far too much otherwise.
  if (!/^[A-Za-z]{3},? /.test(text)) return undefined;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now.getTime());
}

export function decideAfterAttempt(outcome: AttemptOutcome): RetryDecision {
  if (isSuccessStatus(outcome.statusCode)) return { kind: 'succeeded' };
  if (outcome.manual) {
    const { resumeAt } = outcome.manual;
    return resumeAt === null ? { kind: 'failed' } : { kind: 'retry', at: new Date(Math.max(resumeAt.getTime(), outcome.now.getTime())) };
  }
  if (outcome.attempt >= outcome.maxAttempts) return { kind: 'failed' };
  let delayMs = Math.round(outcome.retryIntervalMs * (1 + RETRY_JITTER * (2 * (outcome.jitter ?? 0.5) - 1)));
  if (honoursRetryAfter(outcome.statusCode)) {
    const requested = parseRetryAfter(outcome.retryAfter, outcome.now);
    if (requested !== undefined) delayMs = Math.max(delayMs, Math.min(requested, MAX_RETRY_AFTER_MS));
  }
  return { kind: 'retry', at: new Date(outcome.now.getTime() + delayMs) };
}
