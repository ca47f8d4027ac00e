// The console's only way to the API: openapi-fetch typed by schema.d.ts, generated from the
// service's own OpenAPI document (scripts/console-api-schema.ts), so a changed API fails the build.
import createClient, { type Middleware } from 'openapi-fetch';
import type { paths } from './schema';
import { session, expire, actingAccount } from '../session';

export type { paths };

/** An RFC 9457 problem the API answered, or a network failure. */
export class ApiProblem extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    readonly detail: string,
    readonly errors: { path: string; message: string }[] = [],
  ) {
    super(detail ? `${title}: ${detail}` : title);
  }
  /** The message for a field (`body.callback.url`), including nested members (`body.callback.url.x`). */
  field(path: string): string | undefined {
    const hit = this.errors.filter((e) => e.path === path || e.path.startsWith(`${path}.`) || e.path.startsWith(`${path}[`));
    return hit.length ? hit.map((e) => e.message).join('; ') : undefined;
  }
}

/** Routes that act for the operator's own account: never given `?accountId=`. */
const OWN_ROUTES = /^\/v[12]\/(me|oauth\/|admin\/accounts)/;

const auth: Middleware = {
  onRequest({ request }) {
    const token = session.value?.token;
    if (token) request.headers.set('Authorization', `Bearer ${token}`);
    const url = new URL(request.url);
    const acting = actingAccount.value;
    if (acting && !OWN_ROUTES.test(url.pathname) && !url.searchParams.has('accountId')) {
      url.searchParams.set('accountId', acting);
      return new Request(url, request);
    }
    return request;
  },
  onResponse({ response }) {
    if (response.status === 401 && session.value) expire('Your session expired, sign in again.');
    return response;
  },
};

export const api = createClient<paths>({ baseUrl: location.origin });
api.use(auth);

type Result<T> = { data?: T; error?: unknown; response: Response };

/** The data of a successful answer; a problem document (or any failure) is thrown as ApiProblem. */
export async function call<T>(pending: Promise<Result<T>>): Promise<T> {
  let result: Result<T>;
  try {
    result = await pending;
  } catch (error) {
    throw new ApiProblem(0, 'The service could not be reached', error instanceof Error ? error.message : String(error));
  }
  if (result.response.ok) return result.data as T;
  throw toProblem(result.response.status, result.error);
}

/**
 * RFC 6749's error codes as a person reads them; the token endpoint's `error_description` is the
 * detail. The codes stay what they are for programs.
 */
const OAUTH_ERRORS: Record<string, string> = {
  invalid_client: 'Sign-in refused',
  invalid_grant: 'This console link cannot be used',
  invalid_scope: 'A scope this client does not hold',
  invalid_request: 'Sign-in request incomplete',
  unauthorized_client: 'This client may not sign in this way',
  unsupported_grant_type: 'This way of signing in is not offered',
  temporarily_unavailable: 'Too many sign-in attempts',
};

function toProblem(status: number, body: unknown): ApiProblem {
  const doc = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  const title = typeof doc.title === 'string' ? doc.title : typeof doc.error === 'string' ? (OAUTH_ERRORS[doc.error] ?? doc.error) : `HTTP ${status}`;
  const detail = typeof doc.detail === 'string' ? doc.detail : typeof doc.error_description === 'string' ? doc.error_description : typeof body === 'string' ? body : '';
  const errors = Array.isArray(doc.errors)
    ? (doc.errors as unknown[]).filter((e): e is { path: string; message: string } => {
        const member = e as { path?: unknown; message?: unknown } | null | undefined;
        return typeof member?.path === 'string' && typeof member?.message === 'string';
      })
    : [];
  return new ApiProblem(status, title, detail, errors);
}

export interface TokenAnswer {
  access_token: string;
  expires_in: number;
  scope?: string;
}

/** POST /v2/oauth/token, form-encoded (client_credentials or the console-link grant). */
export function requestToken(form: Record<string, string>): Promise<TokenAnswer> {
  return tokenCall('/v2/oauth/token', 'application/x-www-form-urlencoded', new URLSearchParams(form));
}

/**
 * POST /v1/oauth/token: v1 takes no `scope` and its token carries every scope the client holds,
 * which v2 cannot be asked for without naming them (a scope the client lacks is `invalid_scope`).
 */
export function requestTokenWithEveryScope(clientId: string, clientSecret: string): Promise<TokenAnswer> {
  return tokenCall('/v1/oauth/token', 'application/json', JSON.stringify({ client_id: clientId, client_secret: clientSecret }));
}

async function tokenCall(path: string, contentType: string, form: string | URLSearchParams): Promise<TokenAnswer> {
  let response: Response;
  try {
    response = await fetch(path, { method: 'POST', headers: { 'content-type': contentType }, body: form });
  } catch (error) {
    throw new ApiProblem(0, 'The service could not be reached', error instanceof Error ? error.message : String(error));
  }
  const body: unknown = await response.json().catch(() => undefined);
  if (!response.ok) throw toProblem(response.status, body);
  return body as TokenAnswer;
}

export type Subscription = paths['/v2/subscriptions/{subscriptionId}']['get']['responses'][200]['content']['application/json'];
export type SubscriptionBody = NonNullable<paths['/v2/subscriptions']['post']['requestBody']>['content']['application/json'];
export type Stats = paths['/v2/subscriptions/{subscriptionId}/stats']['get']['responses'][200]['content']['application/json'];
type NotificationPage = paths['/v2/notifications']['get']['responses'][200]['content']['application/json'];
export type Notification = NotificationPage['data'][number];
/** A notification event (plural), as the delivery log names and filters them (domain/notifications/events.ts is the list). */
export type NotificationEvent = NonNullable<NonNullable<paths['/v2/notifications']['get']['parameters']['query']>['event']>;
type Singular<Event> = Event extends `${infer Name}s` ? Name : never;
/** Subscriptions name each event in the singular: the notification event without its final `s` (as domain/notifications/events.ts has them). */
export type SubscriptionEvent = Singular<NotificationEvent>;
export type NotificationDetail = paths['/v2/notifications/{notificationId}']['get']['responses'][200]['content']['application/json'];
export type RewardRequest = paths['/v2/requests/{id}']['get']['responses'][200]['content']['application/json'];
export type RequestEvent = paths['/v2/request/{id}/events']['get']['responses'][200]['content']['application/json'][number];
export type SigningSecretView = paths['/v2/subscriptions/{subscriptionId}/secret']['get']['responses'][200]['content']['application/json'];
type AccountList = paths['/v2/admin/accounts']['get']['responses'][200]['content']['application/json'];
export type Account = Extract<AccountList, unknown[]>[number];
type ClientList = paths['/v2/admin/accounts/{id}/clients']['get']['responses'][200]['content']['application/json'];
export type OAuthClient = Extract<ClientList, unknown[]>[number];
type ConsoleLinkList = paths['/v2/admin/accounts/{id}/console-links']['get']['responses'][200]['content']['application/json'];
export type ConsoleLinkState = Extract<ConsoleLinkList, unknown[]>[number];
type ExperienceList = paths['/v2/admin/experiences']['get']['responses'][200]['content']['application/json'];
export type Experience = Extract<ExperienceList, unknown[]>[number];
export type ExperienceBody = NonNullable<paths['/v2/admin/experiences']['post']['requestBody']>['content']['application/json'];

/** A list route's answer as one page (admin lists answer a bare array without `limit`). */
export function asPage<T>(answer: T[] | { data: T[]; nextCursor: string | null }): { data: T[]; nextCursor: string | null } {
  return Array.isArray(answer) ? { data: answer, nextCursor: null } : answer;
}
