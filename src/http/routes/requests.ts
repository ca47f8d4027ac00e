import type { TypedApp } from '../typed-app.js';
import type { FastifyReply } from 'fastify';
import type { Static } from 'typebox';
import type { AppDeps } from '../../deps.js';
import { idTime, newId } from '../../domain/ids.js';
import { bodyHash, IDEMPOTENCY_TTL_MS } from '../../domain/requests/idempotency.js';
import { toRequestView, type RequestStatus } from '../../domain/requests/request.js';
import { CallbackUrlError, checkCallbackUrl } from '../../net/callback-url.js';
import { findIdempotentResponse, type StoredResponse } from '../../storage/repositories/idempotency-keys.js';
import { findRequest, listRequests, newRequestRow } from '../../storage/repositories/requests.js';
import { conflict, DomainError, invalid, notFound, type FieldError } from '../../domain/errors.js';
import { HttpProblem } from '../problem.js';
import { createdRange } from '../schemas/paging.js';
import { CreateRequestBody, RequestAccepted, RequestIdParams, RequestList, RequestListQuery, RequestView } from '../schemas/requests.js';

type CreateRequest = Static<typeof CreateRequestBody>;

// Printable ASCII, as the IETF Idempotency-Key draft's examples; long enough for a UUID or a hash.
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

async function checkCallbacks(body: CreateRequest, allowPrivate: boolean): Promise<void> {
  const errors: FieldError[] = [];
  for (const field of ['registeredCallbackUrl', 'processedCallbackUrl'] as const) {
    const url = body[field];
    if (url === undefined) continue;
    try {
      await checkCallbackUrl(url, allowPrivate);
    } catch (error) {
      if (!(error instanceof CallbackUrlError)) throw error;
      errors.push({ path: `body.${field}`, message: error.message });
    }
  }
  if (errors.length > 0) throw invalid('request body', errors);
}

/** A request id (`newId('req', …)`): the cursor of GET /requests is the last id of a page. */
const REQUEST_ID = /^req_[0-9a-hjkmnp-tv-z]{26}$/;

/**
 * The cursor's place in the list: a request's id begins with the millisecond it was made at, the
 * same clock reading its `createdAt` holds (one `now` makes both, POST /requests), so the id alone
 * says where the next page starts in (createdAt, id) order.
 */
function cursorPlace(cursor: string): { createdAt: number; id: string } {
  const createdAt = REQUEST_ID.test(cursor) ? idTime(cursor) : undefined;
  if (createdAt === undefined) {
    throw invalid('request querystring', [
      { path: 'querystring.cursor', message: 'is not a nextCursor of this list: pass the nextCursor of the previous page as it was, or leave cursor out for the first page' },
    ]);
  }
  return { createdAt, id: cursor };
}

function replay(reply: FastifyReply, stored: StoredResponse, hash: string) {
  if (stored.bodyHash !== hash) throw conflict('this Idempotency-Key was already used with a different request body');
  if (stored.location) reply.header('location', stored.location);
  return reply.code(stored.status).header('idempotent-replayed', 'true').send(stored.body);
}

export async function requestRoutes(app: TypedApp, deps: AppDeps): Promise<void> {
  const writer = deps.ingest;
  app.addHook('onClose', async () => writer.flush());

  app.post(
    '/requests',
    {
      config: { scope: 'requests:write', problems: { 409: 'the Idempotency-Key was already used with a different body, or a request with it is still being processed' } },
      schema: {
        tags: ['requests'],
        operationId: 'createRequest',
        description: 'Answers 202 with the request id once the request is stored durably; registration and processing follow in the background and are told to the subscriptions (or to the request\'s own callback URLs) by `registered-requests` and `processed-requests` notifications. With an `Idempotency-Key`, a repeated call within 24 h replays the first response.',
        summary: 'Send a reward request; it is stored durably, then registered and processed in the background',
        security: [{ bearerAuth: [] }],
        headers: { type: 'object', properties: { 'idempotency-key': { type: 'string', description: 'replays the first response for 24 h' } } },
        body: CreateRequestBody,
        response: { 202: RequestAccepted },
      },
    },
    async (request, reply) => {
      const body = request.body;
      const accountId = request.auth.accountId;
      const now = deps.clock();
      const key = request.headers['idempotency-key'];
      if (key !== undefined && (typeof key !== 'string' || !IDEMPOTENCY_KEY.test(key))) {
        throw new DomainError('invalid', 'Idempotency-Key must be 1 to 255 printable ASCII characters', [{ path: 'headers.idempotency-key', message: 'is invalid' }]);
      }
      const hash = key ? bodyHash(body) : '';
      if (key) {
        const stored = await findIdempotentResponse(deps.db, accountId, key, now);
        if (stored) return replay(reply, stored, hash);
      }
      await checkCallbacks(body, deps.config.callbackAllowPrivateNetworks);

      const id = newId('req', now);
      const location = `${deps.config.publicUrl}${app.prefix}/requests/${id}`;
      const responseBody = { id, status: 'received' as const };
      const row = newRequestRow({ id, accountId, ...body }, now);
      const idempotency = key
        ? {
            account_id: accountId,
            key,
            body_hash: hash,
            response_status: 202,
            response_body: JSON.stringify(responseBody),
            response_location: location,
            created_at: now,
            expires_at: now + IDEMPOTENCY_TTL_MS,
          }
        : undefined;
      const result = await writer.submit({ row, idempotency });
      if (result === 'key-taken') {
        // A concurrent request with the same key won; answer as its replay would.
        const stored = await findIdempotentResponse(deps.db, accountId, key!, now);
        if (!stored) throw new HttpProblem(409, 'a request with this Idempotency-Key is being processed; retry');
        return replay(reply, stored, hash);
      }
      return reply.code(202).header('location', location).send(responseBody);
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
          'The account\'s reward requests, newest first (by `createdAt`, then `id`), each as GET /requests/{id} shows it; filtered by `status`, ' +
          '`experience` and a range of creation times (`since` inclusive, `until` exclusive). Answers one page `{data, nextCursor}`: pass ' +
          '`nextCursor` as `cursor` for the next page (null on the last); pages do not skip or repeat a request, however many were made in the same millisecond. ' +
          'Operators may list another account\'s with `?accountId=`.',
        summary: 'The account’s reward requests, newest first, with cursor paging',
        security: [{ bearerAuth: [] }],
        querystring: RequestListQuery,
        response: { 200: RequestList },
      },
    },
    async (request) => {
      const { status, experience, cursor } = request.query;
      const limit = request.query.limit ?? 50;
      const { requests, more } = await listRequests(deps.db, {
        accountId: request.auth.accountId,
        status: status as RequestStatus | undefined, // one of the schema's enum
        experience,
        ...createdRange(request.query),
        after: cursor === undefined ? undefined : cursorPlace(cursor),
        limit,
      });
      return { data: requests.map(toRequestView), nextCursor: more ? requests[requests.length - 1]!.id : null };
    },
  );

  app.get(
    '/requests/:id',
    {
      config: { scope: 'requests:read' },
      schema: {
        tags: ['requests'],
        operationId: 'getRequest',
        description: 'The request as it stands: `received`, `registered`, `rejected` (with `errorCode` and `message`), `processed` (with `concluded`, `delivered` and `canceled`) or `failed`. Another account\'s request is a 404.',
        summary: 'A reward request: status, reward value, error, and after processing its delivered and canceled prizes',
        security: [{ bearerAuth: [] }],
        params: RequestIdParams,
        response: { 200: RequestView },
      },
    },
    async (request) => {
      const found = await findRequest(deps.db, request.auth.accountId, request.params.id);
      if (!found) throw notFound('request');
      return toRequestView(found);
    },
  );
}
