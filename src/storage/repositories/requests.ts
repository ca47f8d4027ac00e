import { sql } from 'kysely';
import type { Executor } from '../database.js';
import type { RequestsTable } from '../tables/index.js';
import type { CanceledItem, DeliveredItem } from '../../domain/requests/items.js';
import type { ExperienceSnapshot } from '../../domain/requests/registration.js';
import type { RewardRequest } from '../../domain/requests/request.js';

const parse = <T>(text: string | null): T | null => (text === null ? null : (JSON.parse(text) as T));

export function toRewardRequest(row: RequestsTable): RewardRequest {
  return {
    id: row.id,
    accountId: row.account_id,
    experience: row.experience,
    event: row.event,
    data: row.data === null ? undefined : (JSON.parse(row.data) as unknown),
    registeredCallbackUrl: row.registered_callback_url,
    processedCallbackUrl: row.processed_callback_url,
    status: row.status,
    rewardValue: row.reward_value === null ? null : Number(row.reward_value),
    errorCode: row.error_code,
    message: row.message,
    delivered: parse<DeliveredItem[]>(row.delivered),
    canceled: parse<CanceledItem[]>(row.canceled),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    registeredAt: row.registered_at,
    concludedAt: row.concluded_at,
  };
}

export function experienceSnapshotOf(row: RequestsTable): ExperienceSnapshot | null {
  return parse<ExperienceSnapshot>(row.experience_snapshot);
}

export interface NewRequest {
  id: string;
  accountId: string;
  experience: string;
  event?: string;
  data?: unknown;
  registeredCallbackUrl?: string;
  processedCallbackUrl?: string;
}

export function newRequestRow(input: NewRequest, now: number): RequestsTable {
  return {
    id: input.id,
    account_id: input.accountId,
    experience: input.experience,
    event: input.event ?? null,
    data: input.data === undefined ? null : JSON.stringify(input.data),
    registered_callback_url: input.registeredCallbackUrl ?? null,
    processed_callback_url: input.processedCallbackUrl ?? null,
    status: 'received',
    reward_value: null,
    error_code: null,
    message: null,
    experience_snapshot: null,
    delivered: null,
    canceled: null,
    created_at: now,
    updated_at: now,
    registered_at: null,
    concluded_at: null,
  };
}

/** Multi-row insert: the ingest writer stores a whole group commit in one statement. */
export async function insertRequestRows(db: Executor, rows: RequestsTable[]): Promise<void> {
  if (rows.length > 0) await db.insertInto('requests').values(rows).execute();
}

/** A request of one account: another account's request does not exist for the caller. */
export async function findRequest(db: Executor, accountId: string, id: string): Promise<RewardRequest | undefined> {
  const row = await db.selectFrom('requests').selectAll().where('id', '=', id).where('account_id', '=', accountId).executeTakeFirst();
  return row && toRewardRequest(row);
}

/** What GET /requests filters an account's requests by. */
interface RequestFilter {
  accountId: string;
  status?: RequestsTable['status'] | undefined;
  /** The experience's name, as the request named it. */
  experience?: string | undefined;
  /** Created at or after this time (epoch ms). */
  since?: number | undefined;
  /** Created before this time (epoch ms). */
  until?: number | undefined;
}

export interface RequestPage extends RequestFilter {
  /** The last request of the previous page: the page holds those that come after it, newest first. */
  after?: { createdAt: number; id: string } | undefined;
  limit: number;
}

/**
 * The account's requests newest first: (created_at, id) descending, so requests made in the same
 * millisecond keep one order from page to page. It reads `requests_account_created_idx
 * (account_id, created_at)` from the account's newest request (or from `until`, or from the
 * cursor) down, never another account's rows; `status` and `experience` are kept as it goes, so a
 * rare status reads the account's requests back to the first match (`since` bounds that).
 */
export function listRequestsQuery(db: Executor, page: RequestPage) {
  let query = db.selectFrom('requests').selectAll().where('account_id', '=', page.accountId);
  if (page.status !== undefined) query = query.where('status', '=', page.status);
  if (page.experience !== undefined) query = query.where('experience', '=', page.experience);
  if (page.since !== undefined) query = query.where('created_at', '>=', page.since);
  if (page.until !== undefined) query = query.where('created_at', '<', page.until);
  const after = page.after;
  if (after) {
    // (created_at, id) < (after.createdAt, after.id), with a bound the index can use on its own.
    query = query.where('created_at', '<=', after.createdAt).where((eb) => eb.or([eb('created_at', '<', after.createdAt), eb('id', '<', after.id)]));
  }
  return query
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(page.limit + 1);
}

/** A page of the account's requests (listRequestsQuery); `more` when another page follows. */
export async function listRequests(db: Executor, page: RequestPage): Promise<{ requests: RewardRequest[]; more: boolean }> {
  const rows = await listRequestsQuery(db, page).execute();
  return { requests: rows.slice(0, page.limit).map(toRewardRequest), more: rows.length > page.limit };
}

/** A request as the worker reads it: with whether its account is active, in the same query. */
export type RequestRowForWork = RequestsTable & { account_active: number | null };

/** Rows by id for the worker (not tenant-scoped: jobs carry ids the service itself created). */
export async function findRequestRows(db: Executor, ids: string[]): Promise<Map<string, RequestRowForWork>> {
  if (ids.length === 0) return new Map();
  const rows = await db
    .selectFrom('requests')
    .leftJoin('accounts', 'accounts.id', 'requests.account_id')
    .selectAll('requests')
    .select('accounts.active as account_active')
    .where('requests.id', 'in', ids)
    .execute();
  return new Map(rows.map((row) => [row.id, row]));
}

type StatusChange = Partial<Omit<RequestsTable, 'id' | 'account_id' | 'created_at'>> & Pick<RequestsTable, 'status' | 'updated_at'>;

/**
 * Moves a request from `from` to a new status; undefined when it was not in `from` any more
 * (a duplicate or stale job), so each transition happens once.
 */
export async function changeRequestStatus(db: Executor, id: string, from: RequestsTable['status'][], change: StatusChange): Promise<RewardRequest | undefined> {
  const row = await db.updateTable('requests').set(change).where('id', '=', id).where('status', 'in', from).returningAll().executeTakeFirst();
  return row && toRewardRequest(row);
}

export function registeredChange(input: { rewardValue: number | undefined; snapshot: ExperienceSnapshot; now: number }): StatusChange {
  return {
    status: 'registered',
    reward_value: input.rewardValue ?? null,
    experience_snapshot: JSON.stringify(input.snapshot),
    registered_at: input.now,
    updated_at: input.now,
  };
}

export function rejectedChange(input: { errorCode: string; message: string; now: number }): StatusChange {
  return { status: 'rejected', error_code: input.errorCode, message: input.message, registered_at: input.now, updated_at: input.now };
}

export function failedChange(input: { errorCode: string; message: string; now: number }): StatusChange {
  return { status: 'failed', error_code: input.errorCode, message: input.message, updated_at: input.now };
}

/** One status change for many requests; returns the ids that were still in `from` (and changed). */
export async function changeRequestsStatus(db: Executor, ids: string[], from: RequestsTable['status'][], change: StatusChange): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await db.updateTable('requests').set(change).where('id', 'in', ids).where('status', 'in', from).returning('id').execute();
  return new Set(rows.map((row) => row.id));
}

export interface ProcessedRequestUpdate {
  id: string;
  delivered: DeliveredItem[];
  canceled: CanceledItem[];
  rewardValue: number | undefined;
}

/**
 * Marks a batch of registered requests processed in ONE statement (UPDATE … FROM a VALUES list,
 * valid on SQLite ≥ 3.33 and PostgreSQL): with one statement per request, preparing statements
 * was where the worker's time went, and the batch prepares one. Returns the ids that changed.
 */
export async function markRequestsProcessed(db: Executor, updates: ProcessedRequestUpdate[], now: number): Promise<Set<string>> {
  if (updates.length === 0) return new Set();
  const values = sql.join(updates.map((u) => sql`(${u.id}, ${JSON.stringify(u.delivered)}, ${JSON.stringify(u.canceled)}, cast(${u.rewardValue ?? null} as integer))`));
  const result = await sql<{ id: string }>`
    with v(rid, delivered, canceled, reward_value) as (values ${values})
    update requests
    set status = 'processed', delivered = v.delivered, canceled = v.canceled, reward_value = v.reward_value,
        concluded_at = ${now}, updated_at = ${now}
    from v
    where requests.id = v.rid and requests.status = 'registered'
    returning id`.execute(db);
  return new Set(result.rows.map((row) => row.id));
}
