import { CallbackUrlError, parseCallbackUrl } from '../../net/callback-url.js';
import { normalizeAuthorization } from './authorization.js';
import { EVENT_ALIASES, isOperationalEvent, type SubscriptionEvent } from '../notifications/events.js';
import { LIMITS, type CallbackBody, type FieldError, type SubscriptionBody, type SubscriptionChanges } from './types.js';

/**
 * Pure validation of a subscription body whose JSON shape is already checked: the rules a schema
 * cannot say (event aliases, header names, uniqueness, URL syntax). Network checks of the URLs
 * happen later, in the service. Paths name the body member (`body.callback.url`).
 */

/** `registered-requests` → `registered-request`; undefined for anything else. */
export function normalizeEvent(name: string): SubscriptionEvent | undefined {
  return EVENT_ALIASES.get(name);
}

export const ACCEPTED_EVENT_NAMES = [...EVENT_ALIASES.keys()];

/** RFC 9110 §5.6.2 token. */
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Field values: visible characters, space and tab (what HTTP clients accept to send). */
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
/**
 * Headers the service sets itself or that would break the HTTP exchange. PRODUCT.md §5 lists the
 * first six and `webhook-*`; User-Agent and the event header are set on every call, the test header on a test send (docs/delivery.md);
 * the rest are hop-by-hop headers the HTTP client refuses to send.
 */
const RESERVED_HEADERS = new Set([
  'host',
  'content-length',
  'content-type',
  'transfer-encoding',
  'connection',
  'authorization',
  'user-agent',
  'x-webhook-event',
  'keep-alive',
  'upgrade',
  'expect',
  'te',
  'trailer',
  'proxy-authorization',
  'proxy-connection',
  'x-webhook-test',
]);

export function validateCustomHeaders(headers: Record<string, string>, path: string): FieldError[] {
  const errors: FieldError[] = [];
  const names = Object.keys(headers);
  if (names.length > LIMITS.customHeaders) return [{ path, message: `must have at most ${LIMITS.customHeaders} headers` }];
  const seen = new Set<string>();
  for (const name of names) {
    const at = `${path}.${name}`;
    const lower = name.toLowerCase();
    const value = headers[name]!;
    if (!HEADER_NAME.test(name) || name.length > LIMITS.headerNameLength) {
      errors.push({ path: at, message: `header name must be an HTTP token (letters, digits and !#$%&'*+-.^_\`|~), at most ${LIMITS.headerNameLength} characters` });
    } else if (RESERVED_HEADERS.has(lower) || lower.startsWith('webhook-')) {
      errors.push({ path: at, message: `header ${name} is set by the service and cannot be customised` });
    } else if (seen.has(lower)) {
      errors.push({ path: at, message: 'header names are case-insensitive: this header is given twice' });
    }
    seen.add(lower);
    if (/[\r\n]/.test(value)) errors.push({ path: at, message: 'header value must not contain CR or LF' });
    else if (!HEADER_VALUE.test(value)) errors.push({ path: at, message: 'header value may hold only visible characters, spaces and tabs' });
    else if (value.length > LIMITS.headerValueLength) errors.push({ path: at, message: `header value must be at most ${LIMITS.headerValueLength} characters` });
  }
  return errors;
}

export function validateExperiences(experiences: string[], path: string): FieldError[] {
  if (experiences.length > LIMITS.experiences) return [{ path, message: `must have at most ${LIMITS.experiences} experiences` }];
  const errors: FieldError[] = [];
  const seen = new Set<string>();
  experiences.forEach((name, index) => {
    const at = `${path}.${index}`;
    if (name.trim() === '') errors.push({ path: at, message: 'must not be empty' });
    else if (name.length > LIMITS.experienceNameLength) errors.push({ path: at, message: `must be at most ${LIMITS.experienceNameLength} characters` });
    else if (seen.has(name)) errors.push({ path: at, message: `repeats the experience "${name}"` });
    seen.add(name);
  });
  return errors;
}

/** An operational event is about the account's deliveries, not about requests: no experiences. */
export function validateEventExperiences(event: SubscriptionEvent, experiences: readonly string[]): FieldError[] {
  if (isOperationalEvent(event) && experiences.length > 0) return [{ path: 'body.experiences', message: 'experiences apply to request events; leave it empty for an operational event' }];
  return [];
}

function parseCallback(body: CallbackBody, path: string): { callback: SubscriptionChanges['callback']; errors: FieldError[] } {
  const errors: FieldError[] = [];
  try {
    parseCallbackUrl(body.url);
  } catch (error) {
    if (!(error instanceof CallbackUrlError)) throw error;
    errors.push({ path: `${path}.url`, message: error.message });
  }
  const customHeaders = body.customHeaders ?? {};
  errors.push(...validateCustomHeaders(customHeaders, `${path}.customHeaders`));
  const { authorization, errors: authErrors } = normalizeAuthorization(body.authorization, `${path}.authorization`);
  errors.push(...authErrors);
  return { callback: { url: body.url, authorization, customHeaders: { ...customHeaders } }, errors };
}

export interface ParsedSubscription {
  changes: SubscriptionChanges;
  errors: FieldError[];
}

/**
 * Turns a create or update body into the changes it asks for. A create needs `event` and
 * `callback`; an update changes only the members it carries (PRODUCT.md §5).
 * `owner` holds the values of the read-only members, which a body may echo but not change.
 */
export function parseSubscriptionBody(body: SubscriptionBody, mode: 'create' | 'update', owner: { accountId: string; id?: string }): ParsedSubscription {
  const errors: FieldError[] = [];
  const changes: SubscriptionChanges = {};
  if (body._id !== undefined && body._id !== owner.id) {
    errors.push({ path: 'body._id', message: mode === 'create' ? 'is assigned by the service; leave it out' : 'differs from the subscription in the path' });
  }
  if (body.accountId !== undefined && body.accountId !== owner.accountId) {
    errors.push({ path: 'body.accountId', message: 'is assigned by the service and cannot be changed' });
  }
  if (mode === 'create' && body.event === undefined) errors.push({ path: 'body.event', message: `is required: one of ${ACCEPTED_EVENT_NAMES.join(', ')}` });
  if (mode === 'create' && body.callback === undefined) errors.push({ path: 'body.callback', message: 'is required: an object with at least url' });

  if (body.event !== undefined) {
    changes.event = normalizeEvent(body.event);
    if (!changes.event) errors.push({ path: 'body.event', message: `must be one of ${ACCEPTED_EVENT_NAMES.join(', ')}` });
  }
  if (body.description !== undefined) {
    if (body.description.length > LIMITS.descriptionLength) errors.push({ path: 'body.description', message: `must be at most ${LIMITS.descriptionLength} characters` });
    changes.description = body.description;
  }
  if (body.active !== undefined) changes.active = body.active;
  if (body.experiences !== undefined) {
    errors.push(...validateExperiences(body.experiences, 'body.experiences'));
    changes.experiences = [...body.experiences];
    if (changes.event) errors.push(...validateEventExperiences(changes.event, changes.experiences));
  }
  if (body.rateLimit !== undefined) {
    const limit = body.rateLimit;
    if (limit !== null && (!Number.isInteger(limit) || limit < 1 || limit > LIMITS.rateLimit)) {
      errors.push({ path: 'body.rateLimit', message: `must be a whole number of deliveries per second from 1 to ${LIMITS.rateLimit}, or null for no limit` });
    }
    changes.rateLimit = limit;
  }
  if (body.callback !== undefined) {
    const parsed = parseCallback(body.callback, 'body.callback');
    errors.push(...parsed.errors);
    changes.callback = parsed.callback;
  }
  if (mode === 'create') {
    changes.description ??= '';
    changes.active ??= true;
    changes.experiences ??= [];
    changes.rateLimit ??= null;
  }
  return { changes, errors };
}
