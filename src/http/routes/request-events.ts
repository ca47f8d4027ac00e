import type { TypedApp } from '../typed-app.js';
import { appendPartnerEvent, listEventsOfRequest, type RequestEventsContext } from '../../services/request-events.js';
import { CreateRequestEventBody, RequestEventSchema, RequestIdParams } from '../schemas/requests.js';
import { SAMPLE_EVENTS } from '../schemas/samples.js';

export async function requestEventRoutes(app: TypedApp, deps: RequestEventsContext): Promise<void> {
  // The seed's path is singular: /request/{requestId}/events.
  app.get(
    '/request/:id/events',
    {
      config: { scope: 'events:read' },
      schema: {
        tags: ['events'],
        operationId: 'getRequestEvents',
        description: "The fulfillment events of a reward request (`em-rota-de-entrega`, `pedido-entregue`), oldest first, as the seed contract describes them. Another account's request is a 404.",
        summary: 'The events of a request, oldest first',
        security: [{ bearerAuth: [] }],
        params: RequestIdParams,
        response: { 200: { type: 'array', items: RequestEventSchema, examples: [SAMPLE_EVENTS] } },
      },
    },
    async (request) => listEventsOfRequest(deps.db, request.auth.accountId, request.params.id),
  );

  app.post(
    '/request/:id/events',
    {
      config: { scope: 'events:write', problems: { 409: 'the request is not processed yet' } },
      schema: {
        tags: ['events'],
        operationId: 'createRequestEvent',
        description:
          'Accepted once the request is processed (before that, a 409). `em-rota-de-entrega` needs `data.trackingCode` and `data.trackingLink`. Posting the same (request, name, refId) again answers the stored event.',
        summary: 'Append a fulfillment event from a delivery partner (idempotent on request, name and refId)',
        security: [{ bearerAuth: [] }],
        params: RequestIdParams,
        body: CreateRequestEventBody,
        response: { 200: RequestEventSchema, 201: RequestEventSchema },
      },
    },
    async (request, reply) => {
      const { created, event } = await appendPartnerEvent(deps, request.auth.accountId, request.params.id, request.body);
      return reply.code(created ? 201 : 200).send(event);
    },
  );
}
