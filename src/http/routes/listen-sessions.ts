import { Type } from 'typebox';
import type { TypedApp } from '../typed-app.js';
import { iso } from '../../domain/time.js';
import { createListenSession, endListenSessionNow, pollListenDeliveries, recordListenResult, LISTEN_EVENTS, type ListenContext } from '../../services/listen-sessions.js';
import {
  ListenDeliveriesSchema,
  ListenDeliveryParamsSchema,
  ListenPollQuerySchema,
  ListenQuerySchema,
  ListenResultBodySchema,
  ListenResultSchema,
  ListenSessionBodySchema,
  ListenSessionParamsSchema,
  ListenSessionSchema,
} from '../schemas/listen.js';

const TAGS = ['notifications'];
const SECURITY = [{ bearerAuth: [] }];

/**
 * `rewards listen` (docs/receiving-webhooks.md, "Webhooks on a laptop"): a session receives a copy
 * of each notification event of the account while its CLI polls; the CLI forwards each to a local
 * URL with the headers given and reports the answer, which the delivery log shows. Webhook
 * management: `subscriptions:write` for all of it. Another account's session is a 404.
 */
export async function listenSessionRoutes(app: TypedApp, deps: ListenContext): Promise<void> {
  app.post(
    '/listen-sessions',
    {
      config: { scope: 'subscriptions:write', secretBearing: true },
      preValidation: async (request) => {
        request.body ??= {};
      },
      schema: {
        tags: TAGS,
        security: SECURITY,
        operationId: 'createListenSession',
        summary: 'Start receiving copies of the account’s webhooks to forward them to a local receiver (`rewards listen`)',
        description:
          'Starts a listen session: from its answer on, every `registered-requests` and `processed-requests` event of the account (or those in `events`) also gets one copy for the session in the delivery log (url `listen:<id>`), whether or not it goes to a receiver. ' +
          'Poll `GET /listen-sessions/{id}/deliveries` to take them (each poll keeps the session alive for a minute; without one it ends), forward each with its headers and body, and report the answer with `POST …/result`. ' +
          'The answer lists the secrets the deliveries are signed with, as the real calls are. Answered about a second after the session is created: once every worker sees it.',
        querystring: ListenQuerySchema,
        body: ListenSessionBodySchema,
        response: { 201: ListenSessionSchema },
      },
    },
    async (request, reply) => {
      const session = await createListenSession(deps, request.auth.accountId, request.body.events ?? LISTEN_EVENTS);
      return reply.code(201).send({
        id: session.id,
        accountId: session.accountId,
        events: session.events,
        createdAt: iso(session.createdAt),
        expiresAt: iso(session.expiresAt),
        signingSecrets: session.signingSecrets,
      });
    },
  );

  app.get(
    '/listen-sessions/:sessionId/deliveries',
    {
      config: { scope: 'subscriptions:write' },
      schema: {
        tags: TAGS,
        security: SECURITY,
        operationId: 'pollListenDeliveries',
        summary: 'Take the session’s next deliveries (long poll with `wait`)',
        description:
          'Takes up to `limit` copies waiting for the session, oldest first, each with the exact headers of the real call (signed now) and its body; with none waiting, waits up to `wait` seconds for one. ' +
          "A delivery taken is this caller's for a minute: two pollers of one session never get the same one; one not reported by then is handed out again. " +
          'Each poll keeps the session alive for a minute. A session that ended (deleted, or a minute without a poll) is a 404.',
        params: ListenSessionParamsSchema,
        querystring: ListenPollQuerySchema,
        response: { 200: ListenDeliveriesSchema },
      },
    },
    async (request, reply) => {
      // The caller went away (Ctrl-C during a long poll): stop waiting for it.
      let gone = false;
      reply.raw.once('close', () => (gone = true));
      const data = await pollListenDeliveries(deps, request.auth.accountId, request.params.sessionId, {
        waitSeconds: request.query.wait ?? 0,
        limit: request.query.limit ?? 10,
        gone: () => gone,
      });
      return { data };
    },
  );

  app.post(
    '/listen-sessions/:sessionId/deliveries/:notificationId/result',
    {
      config: { scope: 'subscriptions:write', problems: { 409: 'the delivery is not waiting for a result: already reported, or not handed out by a poll' } },
      schema: {
        tags: TAGS,
        security: SECURITY,
        operationId: 'reportListenResult',
        summary: 'Report the local receiver’s answer to a forwarded delivery',
        description:
          "Records the delivery's one attempt in the delivery log (`GET /notifications/{id}`): succeeded on a 2xx `statusCode`, failed otherwise or without one. " +
          'A delivery no poll handed out, or whose result was already recorded, is a 409.',
        params: ListenDeliveryParamsSchema,
        querystring: ListenQuerySchema,
        body: ListenResultBodySchema,
        response: { 200: ListenResultSchema },
      },
    },
    async (request) => {
      const status = await recordListenResult(deps, request.auth.accountId, request.params.sessionId, request.params.notificationId, request.body);
      return { status };
    },
  );

  app.delete(
    '/listen-sessions/:sessionId',
    {
      config: { scope: 'subscriptions:write' },
      schema: {
        tags: TAGS,
        security: SECURITY,
        operationId: 'deleteListenSession',
        summary: 'End a listen session',
        description:
          'Ends the session now (`rewards listen` does on Ctrl-C): no more copies are written for it, and those not forwarded are removed from the delivery log. Ending an ended session again is a 204.',
        params: ListenSessionParamsSchema,
        querystring: ListenQuerySchema,
        response: { 204: Type.Null() },
      },
    },
    async (request, reply) => {
      await endListenSessionNow(deps, request.auth.accountId, request.params.sessionId);
      return reply.code(204).send(null);
    },
  );
}
