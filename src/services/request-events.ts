import { conflict, invalid, notFound, type FieldError } from '../domain/errors.js';
import type { RequestEventName } from '../domain/requests/events.js';
import type { Executor } from '../storage/database.js';
import { appendRequestEvent, listRequestEvents } from '../storage/repositories/request-events.js';
import { findRequest } from '../storage/repositories/requests.js';

/** The use cases behind the fulfillment events of a request (`/request/{id}/events`). */

export interface RequestEventsContext {
  db: Executor;
  clock: () => number;
}

/** A fulfillment event as a delivery partner posts it. */
interface PartnerEvent {
  name: string;
  refId: string;
  title?: string | undefined;
  data?: { trackingCode?: string | undefined; trackingLink?: string | undefined; [member: string]: unknown } | undefined;
}

function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}

/** What the schema cannot say: a route-to-delivery event carries its tracking code and link. */
function checkPartnerEvent(body: PartnerEvent): FieldError[] {
  const errors: FieldError[] = [];
  const data = body.data ?? {};
  if (body.name === 'em-rota-de-entrega') {
    if (data.trackingCode === undefined) errors.push({ path: 'body.data.trackingCode', message: 'is required for em-rota-de-entrega' });
    if (data.trackingLink === undefined) errors.push({ path: 'body.data.trackingLink', message: 'is required for em-rota-de-entrega' });
  }
  if (data.trackingLink !== undefined && !isHttpUrl(data.trackingLink)) errors.push({ path: 'body.data.trackingLink', message: 'must be an http or https URL' });
  return errors;
}

/** The events of the account's request, oldest first; another account's request is not found. */
export async function listEventsOfRequest(db: Executor, accountId: string, requestId: string) {
  const found = await findRequest(db, accountId, requestId);
  if (!found) throw notFound('request');
  return listRequestEvents(db, requestId);
}

/**
 * Appends a partner's event to the account's request once it is processed (before that, a
 * conflict). The same (request, name, refId) again answers the stored event, `created: false`.
 */
export async function appendPartnerEvent(ctx: RequestEventsContext, accountId: string, requestId: string, body: PartnerEvent) {
  const errors = checkPartnerEvent(body);
  if (errors.length > 0) throw invalid('request body', errors);
  const found = await findRequest(ctx.db, accountId, requestId);
  if (!found) throw notFound('request');
  if (found.status !== 'processed') throw conflict(`the request is ${found.status}; fulfillment events are accepted once it is processed`);
  return appendRequestEvent(ctx.db, { requestId, name: body.name as RequestEventName, refId: body.refId, experience: found.experience, title: body.title, data: body.data }, ctx.clock());
}
