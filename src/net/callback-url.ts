import { isIP } from 'node:net';
import { ForbiddenAddressError, forbiddenAddressMessage, hostForLookup, isPublicAddress, PRIVATE_ADDRESS_WAY_FORWARD, resolvePublicAddresses } from './address-policy.js';
import { DomainError, invalid, type FieldError } from '../domain/errors.js';

const MAX_CALLBACK_URL_LENGTH = 2048;

/** Why a callback URL is refused, without the field's path: the caller puts it on (`checkCallbackTargets`). */
export class CallbackUrlError extends DomainError {
  constructor(message: string) {
    super('invalid', message);
    this.name = 'CallbackUrlError';
  }
}

/** Syntax rules for a callback URL: absolute http(s), a host, no credentials, ≤ 2048 characters. */
export function parseCallbackUrl(raw: string): URL {
  if (raw.length > MAX_CALLBACK_URL_LENGTH) throw new CallbackUrlError(`must be at most ${MAX_CALLBACK_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new CallbackUrlError('must be an absolute URL, like https://example.com/webhooks');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new CallbackUrlError('must use http or https');
  if (!url.hostname) throw new CallbackUrlError('must name a host');
  if (url.username || url.password) throw new CallbackUrlError('must not carry credentials; use callback.authorization');
  return url;
}

/**
 * Full save-time check: syntax, then the host must resolve only to public addresses (unless
 * private networks are allowed). A name that does not resolve is refused too.
 */
export async function checkCallbackUrl(raw: string, allowPrivate: boolean): Promise<URL> {
  const url = parseCallbackUrl(raw);
  const host = hostForLookup(url.hostname);
  if (allowPrivate) return url;
  if (isIP(host)) {
    if (!isPublicAddress(host)) throw new CallbackUrlError(`host ${forbiddenAddressMessage(host, host)}`);
    return url;
  }
  if (host === 'localhost' || host.endsWith('.localhost')) throw new CallbackUrlError(`host ${host} is loopback; ${PRIVATE_ADDRESS_WAY_FORWARD}`);
  try {
    await resolvePublicAddresses(host, false);
  } catch (error) {
    if (error instanceof ForbiddenAddressError) throw new CallbackUrlError(`host ${error.message}`);
    throw new CallbackUrlError(`host ${host} does not resolve; check its spelling and that it is in public DNS (the service looks it up when saving)`);
  }
  return url;
}

/** A URL the service would call, and the member it came from (`body.callback.url`). */
interface CallbackTarget {
  path: string;
  url: string;
}

/**
 * The one SSRF check of the URLs a caller asks the service to call (a request's callback URLs, a
 * subscription's callback and its token URL): each in turn with `checkCallbackUrl`; every refusal
 * is a field error at its path, all of them one `invalid(what, …)`.
 */
export async function checkCallbackTargets(targets: readonly CallbackTarget[], allowPrivate: boolean, what: string): Promise<void> {
  const errors: FieldError[] = [];
  for (const target of targets) {
    try {
      await checkCallbackUrl(target.url, allowPrivate);
    } catch (error) {
      if (!(error instanceof CallbackUrlError)) throw error;
      errors.push({ path: target.path, message: error.message });
    }
  }
  if (errors.length > 0) throw invalid(what, errors);
}
