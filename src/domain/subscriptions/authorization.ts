import { CallbackUrlError, parseCallbackUrl } from '../../net/callback-url.js';
import type { CallbackAuthorization, FieldError, OAuth2Credentials } from './types.js';

/**
 * Pure rules for `callback.authorization`: normalising Basic/Bearer, masking secrets for
 * responses and restoring the stored secret when a client sends a masked value back.
 */

const MASK = '****';
/** Below this length the last four characters would give away too much of the secret. */
const MIN_LENGTH_TO_SHOW_TAIL = 12;

export function maskSecret(secret: string): string {
  return secret.length >= MIN_LENGTH_TO_SHOW_TAIL ? MASK + secret.slice(-4) : MASK;
}

function isMaskedValue(value: string): boolean {
  return value.startsWith(MASK);
}

/**
 * Where a secret's value ends up: sent itself (Basic, Bearer to the callback; a client secret to
 * its token URL) or through what it obtains (the token an OAuth2 client secret gets is sent to the
 * callback). A stored secret is bound to the origin of every one of them.
 */
interface Destination {
  /** Names the URL in the error: `callback.url` or the oauth2 `url`. */
  what: string;
  url(auth: CallbackAuthorization, callbackUrl: string): string | undefined;
}

/** A secret member of the authorization object, with where its value goes (to pin that on reuse). */
interface SecretSlot {
  path: string;
  get(auth: CallbackAuthorization): string | undefined;
  set(auth: CallbackAuthorization, value: string): void;
  destinations: Destination[];
}

const CALLBACK: Destination = { what: 'callback.url, where it is sent,', url: (_a, url) => url };
/** The token a client secret obtains goes to the callback: moving the callback moves the secret's power. */
const CALLBACK_OF_TOKEN: Destination = { what: 'callback.url, where the tokens it obtains are sent,', url: (_a, url) => url };

const SECRET_SLOTS: SecretSlot[] = [
  { path: 'Basic', get: (a) => a.Basic, set: (a, v) => (a.Basic = v), destinations: [CALLBACK] },
  { path: 'Bearer', get: (a) => a.Bearer, set: (a, v) => (a.Bearer = v), destinations: [CALLBACK] },
  {
    path: 'oauth2.client_secret',
    get: (a) => a.oauth2?.client_secret,
    set: (a, v) => (a.oauth2!.client_secret = v),
    destinations: [{ what: 'oauth2.url, where it is sent,', url: (a) => a.oauth2?.url }, CALLBACK_OF_TOKEN],
  },
  {
    path: 'mtls.twoFactor.oauth2.client_secret',
    get: (a) => a.mtls?.twoFactor?.oauth2?.client_secret,
    set: (a, v) => (a.mtls!.twoFactor!.oauth2!.client_secret = v),
    destinations: [{ what: 'mtls.twoFactor.oauth2.url, where it is sent,', url: (a) => a.mtls?.twoFactor?.oauth2?.url }, CALLBACK_OF_TOKEN],
  },
];

function cloneAuthorization(auth: CallbackAuthorization): CallbackAuthorization {
  return structuredClone(auth);
}

/** The authorization as responses show it: every secret masked. */
export function maskAuthorization(auth: CallbackAuthorization): CallbackAuthorization {
  const masked = cloneAuthorization(auth);
  for (const slot of SECRET_SLOTS) {
    const value = slot.get(masked);
    if (value !== undefined) slot.set(masked, maskSecret(value));
  }
  return masked;
}

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
/** RFC 6750 b64token. */
const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;
// eslint-disable-next-line no-control-regex -- finding control characters is what this pattern is for
const CONTROL = /[\u0000-\u001f\u007f]/;

function stripScheme(value: string, scheme: 'Basic' | 'Bearer'): string {
  return value.replace(new RegExp(`^\\s*${scheme}\\s+`, 'i'), '').trim();
}

function basicProblem(credential: string): string | undefined {
  if (credential === '') return 'must not be empty';
  if (!BASE64.test(credential) || credential.length % 4 !== 0) return 'must be the base64 encoding of "user:password", optionally prefixed with "Basic "';
  const decoded = Buffer.from(credential, 'base64').toString('utf8');
  if (!decoded.includes(':')) return 'must be the base64 encoding of "user:password" (the decoded value has no ":")';
  if (CONTROL.test(decoded)) return 'must not encode control characters';
  return undefined;
}

function bearerProblem(token: string): string | undefined {
  if (token === '') return 'must not be empty';
  if (!B64TOKEN.test(token)) return 'must be a token of letters, digits and -._~+/ (RFC 6750), optionally prefixed with "Bearer "';
  return undefined;
}

function oauth2Problems(oauth2: OAuth2Credentials, path: string): FieldError[] {
  const errors: FieldError[] = [];
  if (oauth2.client_id.trim() === '') errors.push({ path: `${path}.client_id`, message: 'must not be empty' });
  if (oauth2.client_secret === '') errors.push({ path: `${path}.client_secret`, message: 'must not be empty' });
  try {
    parseCallbackUrl(oauth2.url);
  } catch (error) {
    if (!(error instanceof CallbackUrlError)) throw error;
    errors.push({ path: `${path}.url`, message: error.message });
  }
  return errors;
}

/**
 * Checks and normalises an authorization object: scheme prefixes are removed from Basic and
 * Bearer, `{}` means none (null). Masked values pass through untouched; `restoreMaskedSecrets`
 * resolves them. Methods that each set the Authorization header cannot be combined.
 */
export function normalizeAuthorization(input: CallbackAuthorization | null | undefined, path: string): { authorization: CallbackAuthorization | null; errors: FieldError[] } {
  if (input === null || input === undefined) return { authorization: null, errors: [] };
  const errors: FieldError[] = [];
  const auth = cloneAuthorization(input);
  if (auth.Basic !== undefined) {
    auth.Basic = stripScheme(auth.Basic, 'Basic');
    const problem = isMaskedValue(auth.Basic) ? undefined : basicProblem(auth.Basic);
    if (problem) errors.push({ path: `${path}.Basic`, message: problem });
  }
  if (auth.Bearer !== undefined) {
    auth.Bearer = stripScheme(auth.Bearer, 'Bearer');
    const problem = isMaskedValue(auth.Bearer) ? undefined : bearerProblem(auth.Bearer);
    if (problem) errors.push({ path: `${path}.Bearer`, message: problem });
  }
  if (auth.oauth2) errors.push(...oauth2Problems(auth.oauth2, `${path}.oauth2`));
  const mtlsOAuth2 = auth.mtls?.twoFactor?.oauth2;
  if (mtlsOAuth2) errors.push(...oauth2Problems(mtlsOAuth2, `${path}.mtls.twoFactor.oauth2`));

  const headerMethods = [auth.Basic, auth.Bearer, auth.oauth2, mtlsOAuth2].filter((m) => m !== undefined).length;
  if (headerMethods > 1) {
    errors.push({
      path,
      message: 'Basic, Bearer, oauth2 and mtls.twoFactor.oauth2 each set the Authorization header: give at most one (mtls combines with any one)',
    });
  }
  const isEmpty = Object.keys(auth).length === 0;
  return { authorization: isEmpty ? null : auth, errors };
}

function originOf(url: string | undefined): string | undefined {
  if (url === undefined) return undefined;
  try {
    return new URL(url).origin;
  } catch {
    return undefined;
  }
}

/**
 * Replaces each masked secret with the stored secret it masks. A masked value is accepted only
 * when the same member holds a stored secret with that mask and every URL the secret or its token
 * goes to keeps its origin: otherwise whoever may edit the subscription (a narrower client, a
 * console session) could move a stored credential to a host of theirs without ever knowing it.
 */
export function restoreMaskedSecrets(
  next: CallbackAuthorization | null,
  nextCallbackUrl: string,
  stored: CallbackAuthorization | null,
  storedCallbackUrl: string | undefined,
  path: string,
): FieldError[] {
  if (!next) return [];
  const errors: FieldError[] = [];
  for (const slot of SECRET_SLOTS) {
    const given = slot.get(next);
    if (given === undefined || !isMaskedValue(given)) continue;
    const previous = stored ? slot.get(stored) : undefined;
    if (previous === undefined || maskSecret(previous) !== given) {
      errors.push({ path: `${path}.${slot.path}`, message: 'is a masked value that matches no stored secret; send the full secret' });
      continue;
    }
    const moved = slot.destinations.find((d) => originOf(d.url(next, nextCallbackUrl)) !== originOf(d.url(stored!, storedCallbackUrl ?? '')));
    if (moved) {
      errors.push({ path: `${path}.${slot.path}`, message: `is masked but ${moved.what} moved to another origin; send the full secret again` });
      continue;
    }
    slot.set(next, previous);
  }
  return errors;
}

/** Every URL the authorization makes the service call (OAuth2 token endpoints), with its path. */
export function authorizationUrls(auth: CallbackAuthorization | null, path: string): { path: string; url: string }[] {
  const urls: { path: string; url: string }[] = [];
  if (auth?.oauth2) urls.push({ path: `${path}.oauth2.url`, url: auth.oauth2.url });
  if (auth?.mtls?.twoFactor?.oauth2) urls.push({ path: `${path}.mtls.twoFactor.oauth2.url`, url: auth.mtls.twoFactor.oauth2.url });
  return urls;
}
