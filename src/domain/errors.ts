/**
 * The one error taxonomy. Use cases throw a DomainError for what the caller got wrong; the HTTP
 * error plugin turns it into an RFC 9457 problem (invalid → 400, not_found → 404, conflict → 409)
 * and the CLI into its message and exit code 2. Anything else thrown is a bug (500, logged).
 */

/** A member at fault, named as the caller sees it (`body.callback.url`, `querystring.event`, `--scopes`). */
export interface FieldError {
  path: string;
  message: string;
}

export type DomainErrorKind = 'invalid' | 'not_found' | 'conflict';

export class DomainError extends Error {
  constructor(
    readonly kind: DomainErrorKind,
    message: string,
    readonly errors?: FieldError[],
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
