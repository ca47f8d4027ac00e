import { failedBeforeTheEndpoint } from './delivery-failure.js';
import type { AnyNotificationEvent } from '../../domain/notifications/events.js';
import { maskRequestHeaders } from '../../domain/notifications/request-headers.js';
import { buildWebhookHeaders } from '../../domain/notifications/signing.js';
import { TEST_SEND_HEADER } from '../../domain/notifications/test-sample.js';
import { planCallbackAuth, type CallbackAuthorization, type CallbackCredential } from './callback-auth.js';
import { USER_AGENT, type OutboundHttpClient, type OutboundResponse } from './http-client.js';
import type { OAuth2TokenCache } from './oauth2-token-cache.js';

/**
 * One notification attempt: sign the body, authenticate, POST it to the callback URL, and report
 * what happened. Never throws: every failure (a DeliveryFailure of the call, its credential or its
 * token request; a signing error) becomes `{ ok: false, error }` with its message, for the delivery
 * log; what to do next is retry-policy.ts's decision.
 */

/** `x-webhook-event`, and the first 1 KiB of each answer the delivery log keeps (PRODUCT.md §7). */
import { EVENT_TYPE_HEADER, MAX_LOGGED_RESPONSE_BYTES } from '../../domain/notifications/webhook-headers.js';

/** Headers a subscription may not set; checked at save time, and here again because it is cheap. */
const RESERVED_HEADER = /^(host|content-length|content-type|transfer-encoding|connection|authorization|user-agent|x-webhook-event|x-webhook-test|webhook-.*)$/i;

export interface DeliveryAttemptInput {
  /** The account the call is made for: calls in flight are shared fairly between accounts. */
  accountId: string;
  url: string;
  /** Exact JSON text sent and signed. */
  body: string;
  eventType: AnyNotificationEvent;
  /** `webhook-id`: the notification's id, the same on every retry. */
  msgId: string;
  /** Signing secrets valid now (`whsec_…`). */
  secrets: readonly string[];
  authorization?: CallbackAuthorization | null;
  customHeaders?: Record<string, string> | null;
  /** Unix seconds for `webhook-timestamp`; defaults to now. */
  timestamp?: number;
  /** A test send: the call carries `x-webhook-test: true`. */
  test?: boolean;
}

export interface AttemptResult {
  ok: boolean;
  statusCode?: number;
  latencyMs: number;
  /** First 1 KiB of the answer, decoded as UTF-8. */
  responseBody?: string;
  error?: string;
  /** The answer's Retry-After header as received (its first MAX_RETRY_AFTER_CHARS), for the retry policy and the delivery log. */
  retryAfter?: string;
  /**
   * The headers of the call made (the last one: an OAuth2 401 makes a second), secrets masked
   * (maskRequestHeaders), for the delivery log. Also when the call failed without an answer
   * (connection, TLS, timeout): they are what was sent or being sent. Absent when no call was made
   * (a signing or credential error, a failed token request). The HTTP client's own headers (`host`,
   * `content-length`, `connection`) are not in it: the logged URL and payload give them.
   */
  requestHeaders?: Record<string, string>;
  /** The attempt failed on the service's side of the call (failedBeforeTheEndpoint): the endpoint's circuit breaker does not count it. */
  notTheEndpoint?: true;
}

export interface DeliveryDeps {
  http: OutboundHttpClient;
  tokens: OAuth2TokenCache;
  /** Milliseconds since the epoch. */
  now?: () => number;
}

function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/**
 * The first 256 characters of an answer's Retry-After are kept (a valid one has at most 29: an
 * HTTP-date): the delivery log records the header (`notification_attempts.retry_after`), and no
 * valid value is cut, so the retry policy reads the same.
 */
const MAX_RETRY_AFTER_CHARS = 256;

/**
 * Text kept in the attempt log (the answer's first KiB, an error message): as received, except
 * NUL characters, which PostgreSQL's text columns refuse (a binary answer made the whole attempt
 * unrecordable there). SQLite stores the same, so both databases log the same text.
 */
function loggableText(text: string): string {
  return text.includes('\u0000') ? text.replaceAll('\u0000', '\uFFFD') : text;
}

function failureMessage(statusCode: number): string | undefined {
  if (statusCode >= 200 && statusCode <= 299) return undefined;
  if (statusCode >= 300 && statusCode <= 399) return `callback answered HTTP ${statusCode}; redirects are not followed`;
  return `callback answered HTTP ${statusCode}`;
}

export async function deliverAttempt(input: Omit<DeliveryAttemptInput, 'accountId'>, deps: DeliveryDeps): Promise<AttemptResult> {
  const now = deps.now ?? Date.now;
  const startedAt = now();
  const elapsed = () => Math.max(0, Math.round(now() - startedAt));
  // The headers of the last call handed to the HTTP client; masked here, so that no secret leaves the outbound side.
  let sent: Record<string, string> | undefined;
  const sentHeaders = () => (sent ? { requestHeaders: maskRequestHeaders(sent) } : {});
  try {
    const plan = planCallbackAuth(input.authorization);
    const baseHeaders: Record<string, string> = {};
    for (const [name, value] of Object.entries(input.customHeaders ?? {})) {
      if (!RESERVED_HEADER.test(name)) baseHeaders[name.toLowerCase()] = value;
    }
    Object.assign(
      baseHeaders,
      {
        'content-type': 'application/json',
        'user-agent': USER_AGENT,
        [EVENT_TYPE_HEADER]: input.eventType,
        ...(input.test ? { [TEST_SEND_HEADER]: 'true' } : {}),
      },
      buildWebhookHeaders({
        msgId: input.msgId,
        timestamp: input.timestamp ?? Math.floor(startedAt / 1000),
        body: input.body,
        secrets: input.secrets,
      }),
    );

    const send = (authorization: string | undefined): Promise<OutboundResponse> => {
      sent = authorization ? { ...baseHeaders, authorization } : baseHeaders;
      return deps.http.send({
        url: input.url,
        method: 'POST',
        headers: sent,
        body: input.body,
        useClientCertificate: plan.useClientCertificate,
        maxBodyBytes: MAX_LOGGED_RESPONSE_BYTES,
      });
    };

    const response = await sendAuthenticated(plan.credential, send, deps.tokens);
    const error = failureMessage(response.statusCode);
    const retryAfter = headerText(response.headers['retry-after'])?.slice(0, MAX_RETRY_AFTER_CHARS);
    return {
      ok: error === undefined,
      statusCode: response.statusCode,
      latencyMs: elapsed(),
      responseBody: loggableText(response.body.toString('utf8')),
      ...(error ? { error } : {}),
      ...(retryAfter !== undefined ? { retryAfter } : {}),
      ...sentHeaders(),
    };
  } catch (error) {
    return {
      ok: false,
      latencyMs: elapsed(),
      error: loggableText((error as Error)?.message ?? String(error)),
      ...(failedBeforeTheEndpoint(error) ? { notTheEndpoint: true as const } : {}),
      ...sentHeaders(),
    };
  }
}

/**
 * Sends with the credential; for OAuth2, a 401 means the cached token may have been revoked or
 * expired early, so it is dropped and the call is made once more with a fresh token.
 */
async function sendAuthenticated(credential: CallbackCredential, send: (authorization: string | undefined) => Promise<OutboundResponse>, tokens: OAuth2TokenCache): Promise<OutboundResponse> {
  if (credential.kind === 'none') return send(undefined);
  if (credential.kind === 'static') return send(credential.authorization);
  const options = { useClientCertificate: credential.tokenRequestUsesClientCertificate };
  const token = await tokens.getToken(credential.client, options);
  const first = await send(`Bearer ${token}`);
  if (first.statusCode !== 401) return first;
  tokens.invalidate(credential.client, options, token);
  const fresh = await tokens.getToken(credential.client, options);
  return send(`Bearer ${fresh}`);
}
