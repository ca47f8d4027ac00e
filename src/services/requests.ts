import type { Config } from '../config.js';
import { conflict, invalid, notFound } from '../domain/errors.js';
import { idTime, newId } from '../domain/ids.js';
import { bodyHash, IDEMPOTENCY_TTL_MS } from '../domain/requests/idempotency.js';
import type { RequestStatus } from '../domain/requests/request.js';
import { checkCallbackTargets } from '../net/callback-url.js';
import type { Db, Executor } from '../storage/database.js';
import { findIdempotentResponse, type StoredResponse } from '../storage/repositories/idempotency-keys.js';
import { findRequest, listRequests as listRequestRows, newRequestRow, type NewRequest } from '../storage/repositories/requests.js';
import type { RequestIngestWriter } from '../storage/request-ingest-writer.js';
import { readFromReplica, type ReplicaReads } from './replica-reads.js';

/** The use cases behind the reward request endpoints: accept one (POST /requests), read one, list them. */

export interface RequestsContext extends ReplicaReads {
  db: Db;
  /** The group commit of accepted requests: each is answered once the commit holding it is done. */
  ingest: RequestIngestWriter;
  clock: () => number;
  config: Pick<Config, 'callbackAllowPrivateNetworks'>;
}

/** A reward request as the caller sends it: the experience, its event and data, its own callback URLs. */
type RequestBody = Omit<NewRequest, 'id' | 'accountId'>;

interface CreateRequestInput {
  accountId: string;
  body: RequestBody;
  /** The Idempotency-Key the caller sent, checked for its form by the caller. */
  idempotencyKey?: string | undefined;
  /** Where the new request can be read back (the response's Location, kept for a replay). */
  locationOf: (id: string) => string;
  /** Traces on: the API call's span (a W3C `traceparent`), carried by the registration job. */
  traceParent?: string | undefined;
}

/** The answer to give: a new request's, or the first one's replayed under the same Idempotency-Key. */
export interface RequestAnswer {
  status: number;
  body: unknown;
  location: string | null;
  replayed: boolean;
}

function replay(stored: StoredResponse, hash: string): RequestAnswer {
  if (stored.bodyHash !== hash) throw conflict('this Idempotency-Key was already used with a different request body');
  return { status: stored.status, body: stored.body, location: stored.location, replayed: true };
}

/**
 * Accepts a reward request: answered from the first response when its Idempotency-Key was used in
 * the last 24 h (a different body under the same key is a conflict); otherwise its callback URLs
 * pass the SSRF check, and the request, its registration job and the response kept under its key
 * are stored by the ingest writer's next commit. A concurrent request with the same key that won
 * is answered as its replay would be.
 */
export async function createRequest(ctx: RequestsContext, input: CreateRequestInput): Promise<RequestAnswer> {
  const { accountId, body, idempotencyKey: key } = input;
  const now = ctx.clock();
  const hash = key ? bodyHash(body) : '';
  if (key) {
    const stored = await findIdempotentResponse(ctx.db, accountId, key, now);
    if (stored) return replay(stored, hash);
  }
  const targets = (['registeredCallbackUrl', 'processedCallbackUrl'] as const).flatMap((field) => {
    const url = body[field];
    return url === undefined ? [] : [{ path: `body.${field}`, url }];
  });
  await checkCallbackTargets(targets, ctx.config.callbackAllowPrivateNetworks, 'request body');

  const id = newId('req', now);
  const location = input.locationOf(id);
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
  const result = await ctx.ingest.submit({ row, idempotency, traceParent: input.traceParent });
  if (result === 'key-taken') {
    // A concurrent request with the same key won; answer as its replay would.
    const stored = await findIdempotentResponse(ctx.db, accountId, key!, now);
    if (!stored) throw conflict('a request with this Idempotency-Key is being processed; retry');
    return replay(stored, hash);
  }
  return { status: 202, body: responseBody, location, replayed: false };
}

/** The account's request; another account's is not found. */
export async function getRequest(db: Executor, accountId: string, id: string) {
  const found = await findRequest(db, accountId, id);
  if (!found) throw notFound('request');
  return found;
}

/** A request id (`newId('req', …)`): the cursor of GET /requests is the last id of a page. */
const REQUEST_ID = /^req_[0-9a-hjkmnp-tv-z]{26}$/;

/**
 * The cursor's place in the list: a request's id begins with the millisecond it was made at, the
 * same clock reading its `createdAt` holds (one `now` makes both, `createRequest`), so the id alone
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

interface RequestListQuery {
  accountId: string;
  status?: RequestStatus | undefined;
  experience?: string | undefined;
  /** Created at or after (epoch ms). */
  since?: number;
  /** Created before (epoch ms). */
  until?: number;
  /** The `nextCursor` of the previous page. */
  cursor?: string | undefined;
  limit: number;
}

/** One page of the account's requests, newest first, and the cursor of the next (null on the last). */
export async function listRequests(reads: ReplicaReads, query: RequestListQuery) {
  const { cursor, ...filter } = query;
  const { requests, more } = await readFromReplica(reads, (db) => listRequestRows(db, { ...filter, after: cursor === undefined ? undefined : cursorPlace(cursor) }));
  return { requests, nextCursor: more ? requests[requests.length - 1]!.id : null };
}
