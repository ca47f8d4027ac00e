/**
 * The one error taxonomy. Use cases throw a DomainError for what the caller got wrong; the HTTP
 * error plugin turns it into an RFC 9457 problem (invalid → 400, not_found → 404, conflict → 409,
 * rate_limited → 429 with Retry-After) and the CLI into its message and exit code 2. Anything else
 * thrown is a bug (500, logged).
 */

/** A member at fault, named as the caller sees it (`body.callback.url`, `querystring.event`, `--scopes`). */
export interface FieldError {
  path: string;
  message: string;
}

export type DomainErrorKind = 'invalid' | 'not_found' | 'conflict' | 'rate_limited';

export class DomainError extends Error {
  constructor(
    readonly kind: DomainErrorKind,
    message: string,
    readonly errors?: FieldError[],
    /** rate_limited: seconds until the caller may try again. */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
    this.name = 'DomainError';
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
export const rateLimited = (message: string, retryAfterSeconds: number) => new DomainError('rate_limited', message, undefined, Math.max(1, Math.ceil(retryAfterSeconds)));
