import type { TypedApp } from '../typed-app.js';
import type { Static } from 'typebox';
import type { AppDeps } from '../../deps.js';
import type { RequestEventName } from '../../domain/requests/events.js';
import { appendRequestEvent, listRequestEvents } from '../../storage/repositories/request-events.js';
import { findRequest } from '../../storage/repositories/requests.js';
import { conflict, invalid, notFound, type FieldError } from '../../domain/errors.js';
import { CreateRequestEventBody, RequestEventSchema, RequestIdParams } from '../schemas/requests.js';
import { SAMPLE_EVENTS } from '../schemas/samples.js';

type CreateEvent = Static<typeof CreateRequestEventBody>;

function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}

/** What the schema cannot say: a route-to-delivery event carries its tracking code and link. */
function checkPartnerEvent(body: CreateEvent): FieldError[] {
  const errors: FieldError[] = [];
  const data = body.data ?? {};
  if (body.name === 'em-rota-de-entrega') {
    if (data.trackingCode === undefined) errors.push({ path: 'body.data.trackingCode', message: 'is required for em-rota-de-entrega' });
    if (data.trackingLink === undefined) errors.push({ path: 'body.data.trackingLink', message: 'is required for em-rota-de-entrega' });
  }
  if (data.trackingLink !== undefined && !isHttpUrl(data.trackingLink)) errors.push({ path: 'body.data.trackingLink', message: 'must be an http or https URL' });
  return errors;
}

export async function requestEventRoutes(app: TypedApp, deps: AppDeps): Promise<void> {
  // The seed's path is singular: /request/{requestId}/events.
  app.get(
    '/request/:id/events',
    {
      config: { scope: 'events:read' },
      schema: {
        tags: ['events'],
        operationId: 'getRequestEvents',
        description: 'The fulfillment events of a reward request (`em-rota-de-entrega`, `pedido-entregue`), oldest first, as the seed contract describes them. Another account\'s request is a 404.',
        summary: 'The events of a request, oldest first',
        security: [{ bearerAuth: [] }],
        params: RequestIdParams,
        response: { 200: { type: 'array', items: RequestEventSchema, examples: [SAMPLE_EVENTS] } },
      },
    },
    async (request) => {
      const { id } = request.params;
      const found = await findRequest(deps.db, request.auth.accountId, id);
      if (!found) throw notFound('request');
      return listRequestEvents(deps.db, id);
    },
  );

  app.post(
    '/request/:id/events',
    {
      config: { scope: 'events:write', problems: { 409: 'the request is not processed yet' } },
      schema: {
        tags: ['events'],
        operationId: 'createRequestEvent',
        description: 'Accepted once the request is processed (before that, a 409). `em-rota-de-entrega` needs `data.trackingCode` and `data.trackingLink`. Posting the same (request, name, refId) again answers the stored event.',
        summary: 'Append a fulfillment event from a delivery partner (idempotent on request, name and refId)',
        security: [{ bearerAuth: [] }],
        params: RequestIdParams,
        body: CreateRequestEventBody,
        response: { 200: RequestEventSchema, 201: RequestEventSchema },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      const body = request.body;
      const errors = checkPartnerEvent(body);
      if (errors.length > 0) throw invalid('request body', errors);
      const found = await findRequest(deps.db, request.auth.accountId, id);
      if (!found) throw notFound('request');
      if (found.status !== 'processed') throw conflict(`the request is ${found.status}; fulfillment events are accepted once it is processed`);
      const { created, event } = await appendRequestEvent(
        deps.db,
        { requestId: id, name: body.name as RequestEventName, refId: body.refId, experience: found.experience, title: body.title, data: body.data },
        deps.clock(),
      );
      return reply.code(created ? 201 : 200).send(event);
    },
  );
}
