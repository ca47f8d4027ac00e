import type { Executor } from '../database.js';
import type { RequestEventsTable } from '../tables/index.js';
import { REQUEST_EVENT_TITLES, type RequestEventName, type RequestEventView } from '../../domain/requests/events.js';
import { iso } from '../../domain/time.js';

export interface NewRequestEvent {
  requestId: string;
  name: RequestEventName;
  refId: string;
  experience: string;
  data?: Record<string, unknown>;
  title?: string;
}

type EventRow = Omit<RequestEventsTable, 'seq'>;

function toRow(event: NewRequestEvent, now: number): EventRow {
  return {
    request_id: event.requestId,
    name: event.name,
    title: event.title ?? REQUEST_EVENT_TITLES[event.name],
    ref_id: event.refId,
    experience: event.experience,
    data: event.data === undefined ? null : JSON.stringify(event.data),
    created_at: now,
  };
}

function toRequestEventView(row: Pick<RequestEventsTable, 'name' | 'title' | 'created_at' | 'ref_id' | 'experience' | 'data'>): RequestEventView {
  return {
    name: row.name,
    title: row.title,
    date: iso(row.created_at),
    refId: row.ref_id,
    experience: row.experience,
    ...(row.data !== null ? { data: JSON.parse(row.data) as Record<string, unknown> } : {}),
  };
}

/** Lifecycle events, written in the transaction of the state change; a replay adds nothing. */
export async function recordRequestEvents(db: Executor, events: NewRequestEvent[], now: number): Promise<void> {
  if (events.length === 0) return;
  await db
    .insertInto('request_events')
    .values(events.map((event) => toRow(event, now)))
    .onConflict((oc) => oc.columns(['request_id', 'name', 'ref_id']).doNothing())
    .execute();
}

/** A partner's event, idempotent on (request, name, refId): `created` is false for a replay. */
export async function appendRequestEvent(db: Executor, event: NewRequestEvent, now: number): Promise<{ created: boolean; event: RequestEventView }> {
  const inserted = await db
    .insertInto('request_events')
    .values(toRow(event, now))
    .onConflict((oc) => oc.columns(['request_id', 'name', 'ref_id']).doNothing())
    .returningAll()
    .executeTakeFirst();
  if (inserted) return { created: true, event: toRequestEventView(inserted) };
  const existing = await db
    .selectFrom('request_events')
    .selectAll()
    .where('request_id', '=', event.requestId)
    .where('name', '=', event.name)
    .where('ref_id', '=', event.refId)
    .executeTakeFirstOrThrow();
  return { created: false, event: toRequestEventView(existing) };
}

/** The request's events, oldest first (recording order). */
export async function listRequestEvents(db: Executor, requestId: string): Promise<RequestEventView[]> {
  const rows = await db.selectFrom('request_events').selectAll().where('request_id', '=', requestId).orderBy('seq').execute();
  return rows.map(toRequestEventView);
}
