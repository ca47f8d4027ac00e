import { sql } from 'kysely';
import type { Circuit } from '../../domain/notifications/circuit-breaker.js';
import type { Executor } from '../database.js';
import { dialectOf } from '../dialect.js';
import type { EndpointCircuitsTable } from '../tables/index.js';

/**
 * Endpoint circuits (migration 025, docs/delivery.md "Circuit breaker"): a row per endpoint that
 * is failing, open or draining; none for a healthy one. The rules are the domain's
 * (domain/notifications/circuit-breaker.ts); the held notifications are storage/deliveries.ts's.
 */

export interface Endpoint {
  accountId: string;
  url: string;
}

/** One string per endpoint, for maps and sets. */
export const endpointKey = (endpoint: Endpoint): string => `${endpoint.accountId}\u0000${endpoint.url}`;

export type StoredCircuit = Circuit & Endpoint;

const n = (value: number | string | null): number | null => (value === null ? null : Number(value));

function toCircuit(row: EndpointCircuitsTable): StoredCircuit {
  return {
    accountId: row.account_id,
    url: row.url,
    state: row.state,
    failures: Number(row.failures),
    reason: row.reason,
    openedAt: n(row.opened_at),
    closedAt: n(row.closed_at),
    nextProbeAt: n(row.next_probe_at),
    probeIntervalMs: n(row.probe_interval_ms),
    probeId: row.probe_id,
    probeUntil: n(row.probe_until),
    probes: Number(row.probes),
  };
}

/**
 * The circuits of `endpoints` that exist, by endpointKey. `lock`: held until the transaction ends
 * (PostgreSQL `for update`, in key order so that two writers never wait for each other in a
 * circle; SQLite has one writer), so that what the caller writes next follows from what it read.
 */
export async function findCircuits(db: Executor, endpoints: readonly Endpoint[], options: { lock?: boolean; state?: Circuit['state'] } = {}): Promise<Map<string, StoredCircuit>> {
  if (endpoints.length === 0) return new Map();
  const dialect = dialectOf(db);
  const keys = JSON.stringify(endpoints.map((endpoint) => ({ account_id: endpoint.accountId, url: endpoint.url })));
  const { rows } = await sql<EndpointCircuitsTable>`select c.* from endpoint_circuits c join ${dialect.records(keys, 'k', { account_id: 'text', url: 'text' })}
      on c.account_id = k.account_id and c.url = k.url ${options.state ? sql`where c.state = ${options.state}` : sql``}
      order by c.account_id, c.url ${options.lock ? dialect.rowLock({ of: 'c' }) : sql``}`.execute(db);
  return new Map(rows.map((row) => [endpointKey({ accountId: row.account_id, url: row.url }), toCircuit(row)]));
}

export async function findCircuit(db: Executor, endpoint: Endpoint): Promise<StoredCircuit | undefined> {
  const row = await db.selectFrom('endpoint_circuits').selectAll().where('account_id', '=', endpoint.accountId).where('url', '=', endpoint.url).executeTakeFirst();
  return row ? toCircuit(row) : undefined;
}

/** Writes the circuit as it is now, or deletes it (undefined: the endpoint is healthy). */
export async function saveCircuit(db: Executor, endpoint: Endpoint, circuit: Circuit | undefined, now: number): Promise<void> {
  if (!circuit) {
    await db.deleteFrom('endpoint_circuits').where('account_id', '=', endpoint.accountId).where('url', '=', endpoint.url).execute();
    return;
  }
  const columns = {
    state: circuit.state,
    failures: circuit.failures,
    reason: circuit.reason,
    opened_at: circuit.openedAt,
    closed_at: circuit.closedAt,
    next_probe_at: circuit.nextProbeAt,
    probe_interval_ms: circuit.probeIntervalMs,
    probe_id: circuit.probeId,
    probe_until: circuit.probeUntil,
    probes: circuit.probes,
    updated_at: now,
  };
  await db
    .insertInto('endpoint_circuits')
    .values({ account_id: endpoint.accountId, url: endpoint.url, ...columns })
    .onConflict((oc) => oc.columns(['account_id', 'url']).doUpdateSet(columns))
    .execute();
}

/** The endpoints whose circuit is open now (the worker's view, refreshed every second). */
export async function listOpenCircuits(db: Executor): Promise<StoredCircuit[]> {
  const rows = await db.selectFrom('endpoint_circuits').selectAll().where('state', '=', 'open').execute();
  return rows.map(toCircuit);
}

/** The circuits the worker's upkeep has work for: open ones whose probe may start, and draining ones. */
export async function listCircuitsToTend(db: Executor, now: number): Promise<StoredCircuit[]> {
  const rows = await db
    .selectFrom('endpoint_circuits')
    .selectAll()
    .where((eb) => eb.or([eb('state', '=', 'draining'), eb.and([eb('state', '=', 'open'), eb('next_probe_at', '<=', now), eb.or([eb('probe_until', 'is', null), eb('probe_until', '<=', now)])])]))
    .execute();
  return rows.map(toCircuit);
}

/** How many notifications the endpoint's breaker holds now (the partial index of held ones). */
export async function countHeld(db: Executor, endpoint: Endpoint): Promise<number> {
  const row = await db
    .selectFrom('notifications')
    .select(sql<number | string>`count(*)`.as('n'))
    .where('account_id', '=', endpoint.accountId)
    .where('url', '=', endpoint.url)
    .where('held_at', 'is not', null)
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

/**
 * How many of the endpoint's notifications are due and not yet sent (released ones waiting for a
 * worker), up to `limit`: a draining circuit releases the next window only when the last one is
 * nearly out, so an endpoint's backlog never sits in front of its account's other endpoints.
 */
export async function countDue(db: Executor, endpoint: Endpoint, now: number, limit: number): Promise<number> {
  const { rows } = await sql<{ n: number | string }>`select count(*) as n from (select 1 from notifications
      where account_id = ${endpoint.accountId} and status = 'pending' and run_at is not null and run_at <= cast(${now} as bigint) and url = ${endpoint.url}
      limit ${limit}) due`.execute(db);
  return Number(rows[0]?.n ?? 0);
}
