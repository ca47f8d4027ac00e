/**
 * The one error taxonomy. Use cases, routes and the HTTP plugins throw a DomainError for what the
 * caller got wrong or cannot have right now; the HTTP error plugin (src/http/plugins/errors.ts) is
 * the one place that turns it into an RFC 9457 problem (invalid → 400, unauthenticated → 401,
 * forbidden → 403, not_found → 404, conflict → 409, too_large → 413, unsupported_media_type → 415,
 * rate_limited → 429, unavailable → 503; Retry-After from `retryAfterSeconds`, WWW-Authenticate
 * from `challenge`), and the CLI into its message and exit code 2. Anything else thrown is a bug
 * (500, logged), except a database that cannot serve, which the error plugin answers as a 503
 * (services/database-readiness.ts `isDatabaseUnavailable` decides which errors those are).
 *
 * The other error classes, and why they stay apart:
 * - `CallbackUrlError` (net/callback-url.ts) and `InvalidTokenError` (services/access-tokens.ts)
 *   leave their modules, so they are DomainErrors (`invalid`, `unauthenticated`) that say what is
 *   wrong without naming the field or the challenge: the one SSRF check (`checkCallbackTargets`,
 *   net/callback-url.ts) and the subscription body's parsing put the field path on the first, the
 *   bearer authentication (http/plugins/auth.ts) the challenge on the second.
 * - `ForbiddenAddressError` (net/address-policy.ts) is a fact about a connection, not a caller's
 *   fault: the worker records it as a delivery attempt's outcome (its `code`), and the save-time
 *   check turns it into a CallbackUrlError.
 * - `OAuthError` (domain/tokens/oauth-errors.ts) is the token endpoint's own wire format (RFC 6749
 *   §5.2 `{error, error_description}`, not a problem document), answered by
 *   http/token-endpoint.ts and nothing else.
 * - The worker's errors (src/worker/) are delivery and job outcomes; none reaches a caller.
 */

/** A member at fault, named as the caller sees it (`body.callback.url`, `querystring.event`, `--scopes`). */
export interface FieldError {
  path: string;
  message: string;
}

export type DomainErrorKind = 'invalid' | 'unauthenticated' | 'forbidden' | 'not_found' | 'conflict' | 'too_large' | 'unsupported_media_type' | 'rate_limited' | 'unavailable';

interface DomainErrorDetails {
  /** rate_limited, unavailable: seconds until the caller may try again. */
  retryAfterSeconds?: number;
  /** unauthenticated, forbidden (and a malformed credential): the authentication challenge the caller should answer. */
  challenge?: string;
}

export class DomainError extends Error {
  /** rate_limited, unavailable: seconds until the caller may try again. */
  readonly retryAfterSeconds?: number;
  /** The authentication challenge the caller should answer (HTTP: WWW-Authenticate). */
  readonly challenge?: string;

  constructor(
    readonly kind: DomainErrorKind,
    message: string,
    readonly errors?: FieldError[],
    details: DomainErrorDetails = {},
  ) {
    super(message);
    this.name = 'DomainError';
    if (details.retryAfterSeconds !== undefined) this.retryAfterSeconds = details.retryAfterSeconds;
    if (details.challenge !== undefined) this.challenge = details.challenge;
  }
}

/** Invalid input; with field errors, the message names the first of them. */
export function invalid(subject: string, errors?: FieldError[]): DomainError {
  const first = errors?.[0];
  return new DomainError('invalid', first ? `${subject} is invalid: ${first.path} ${first.message}` : subject, errors);
}

export const notFound = (what: string) => new DomainError('not_found', `${what} not found`);

export const conflict = (message: string) => new DomainError('conflict', message);

/** Too many of something in a window: the caller may try again in `retryAfterSeconds`. */
export const rateLimited = (message: string, retryAfterSeconds: number) => new DomainError('rate_limited', message, undefined, { retryAfterSeconds: Math.max(1, Math.ceil(retryAfterSeconds)) });

/** The service cannot serve this now (its database, a part not built yet); with `retryAfterSeconds`, when to try again. */
export const unavailable = (message: string, retryAfterSeconds?: number) => new DomainError('unavailable', message, undefined, retryAfterSeconds === undefined ? {} : { retryAfterSeconds });
