import type { TypedApp } from '../typed-app.js';
import type { FastifyReply } from 'fastify';
import type { Config } from '../../config.js';
import { toRequestView, type RequestStatus } from '../../domain/requests/request.js';
import { createRequest, getRequest, listRequests, type RequestAnswer, type RequestsContext } from '../../services/requests.js';
import { DomainError } from '../../domain/errors.js';
import { createdRange } from '../schemas/paging.js';
import { CreateRequestBody, RequestAccepted, RequestIdParams, RequestList, RequestListQuery, RequestView } from '../schemas/requests.js';
import type { Tracing } from '../../tracing.js';
import { serverSpans } from '../server-span.js';

interface RequestRouteDeps extends RequestsContext {
  config: RequestsContext['config'] & Pick<Config, 'publicUrl'>;
  /** Traces (docs/deployment.md, "Traces"): undefined while off. */
  tracing: Tracing | undefined;
}

// Printable ASCII, as the IETF Idempotency-Key draft's examples; long enough for a UUID or a hash.
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/** The answer as HTTP: its status and body, its Location, and `Idempotent-Replayed: true` on a replay. */
function send(reply: FastifyReply, answer: RequestAnswer) {
  if (answer.location) reply.header('location', answer.location);
  if (answer.replayed) reply.header('idempotent-replayed', 'true');
  return reply.code(answer.status).send(answer.body);
}

export async function requestRoutes(app: TypedApp, deps: RequestRouteDeps): Promise<void> {
  app.addHook('onClose', async () => deps.ingest.flush());
  // Traces off (the default), the route has no span and no hook: one `if` per call.
  const spans = deps.tracing && serverSpans(deps.tracing);

  app.post(
    '/requests',
    {
      config: { scope: 'requests:write', problems: { 409: 'the Idempotency-Key was already used with a different body, or a request with it is still being processed' } },
      schema: {
        tags: ['requests'],
        operationId: 'createRequest',
        description:
          "Answers 202 with the request id once the request is stored durably; registration and processing follow in the background and are told to the subscriptions (or to the request's own callback URLs) by `registered-requests` and `processed-requests` notifications. With an `Idempotency-Key`, a repeated call within 24 h replays the first response.",
        summary: 'Send a reward request; it is stored durably, then registered and processed in the background',
        security: [{ bearerAuth: [] }],
        headers: {
          type: 'object',
          properties: {
            'idempotency-key': { type: 'string', description: 'replays the first response for 24 h' },
            traceparent: {
              type: 'string',
              description: 'W3C Trace Context: when the service exports traces, the request (its registration, processing and deliveries) joins this trace. A value that is not valid is ignored.',
            },
          },
        },
        body: CreateRequestBody,
        response: { 202: RequestAccepted },
      },
      ...(spans ? { onResponse: spans.onResponse } : {}),
    },
    async (request, reply) => {
      const span = spans ? spans.start(request, reply) : undefined;
      const key = request.headers['idempotency-key'];
      if (key !== undefined && (typeof key !== 'string' || !IDEMPOTENCY_KEY.test(key))) {
        throw new DomainError('invalid', 'Idempotency-Key must be 1 to 255 printable ASCII characters', [{ path: 'headers.idempotency-key', message: 'is invalid' }]);
      }
      const answer = await createRequest(deps, {
        accountId: request.auth.accountId,
        body: request.body,
        idempotencyKey: key,
        locationOf: (id) => `${deps.config.publicUrl}${app.prefix}/requests/${id}`,
        traceParent: span?.traceParent,
      });
      span?.setAttributes({ 'rewards.request.id': (answer.body as { id: string }).id, 'rewards.account.id': request.auth.accountId, 'rewards.idempotent_replay': answer.replayed });
      return send(reply, answer);
    },
  );

  app.get(
    '/requests',
    {
      config: { scope: 'requests:read' },
      schema: {
        tags: ['requests'],
        operationId: 'listRequests',
        description:
          "The account's reward requests, newest first (by `createdAt`, then `id`), each as GET /requests/{id} shows it; filtered by `status`, " +
          '`experience` and a range of creation times (`since` inclusive, `until` exclusive). Answers one page `{data, nextCursor}`: pass ' +
          '`nextCursor` as `cursor` for the next page (null on the last); pages do not skip or repeat a request, however many were made in the same millisecond. ' +
          "Operators may list another account's with `?accountId=`.",
        summary: 'The account’s reward requests, newest first, with cursor paging',
        security: [{ bearerAuth: [] }],
        querystring: RequestListQuery,
        response: { 200: RequestList },
      },
    },
    async (request) => {
      const { status, experience, cursor } = request.query;
      const limit = request.query.limit ?? 50;
      const { requests, nextCursor } = await listRequests(deps, {
        accountId: request.auth.accountId,
        status: status as RequestStatus | undefined, // one of the schema's enum
        experience,
        ...createdRange(request.query),
        cursor,
        limit,
      });
      return { data: requests.map(toRequestView), nextCursor };
    },
  );

  app.get(
    '/requests/:id',
    {
      config: { scope: 'requests:read' },
      schema: {
        tags: ['requests'],
        operationId: 'getRequest',
        description:
          "The request as it stands: `received`, `registered`, `rejected` (with `errorCode` and `message`), `processed` (with `concluded`, `delivered` and `canceled`) or `failed`. Another account's request is a 404.",
        summary: 'A reward request: status, reward value, error, and after processing its delivered and canceled prizes',
        security: [{ bearerAuth: [] }],
        params: RequestIdParams,
        response: { 200: RequestView },
      },
    },
    async (request) => {
      return toRequestView(await getRequest(deps.db, request.auth.accountId, request.params.id));
    },
  );
}
