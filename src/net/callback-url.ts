import { isIP } from 'node:net';
import { ForbiddenAddressError, hostForLookup, isPublicAddress, resolvePublicAddresses } from './address-policy.js';

export const MAX_CALLBACK_URL_LENGTH = 2048;

export class CallbackUrlError extends Error {
  constructor(message: string) {
    super(message);
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
    throw new CallbackUrlError('must be an absolute URL');
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
    if (!isPublicAddress(host)) throw new CallbackUrlError(`host ${host} is a loopback, private, link-local or reserved address`);
    return url;
  }
  if (host === 'localhost' || host.endsWith('.localhost')) throw new CallbackUrlError(`host ${host} is loopback`);
  try {
    await resolvePublicAddresses(host, false);
  } catch (error) {
    if (error instanceof ForbiddenAddressError) throw new CallbackUrlError(error.message);
    throw new CallbackUrlError(`host ${host} does not resolve`);
  }
  return url;
}
