import type { Executor } from '../database.js';
import type { IdempotencyKeysTable } from '../tables/index.js';

export interface StoredResponse {
  bodyHash: string;
  status: number;
  body: unknown;
  location: string | null;
}

/** The first response stored under (account, key), if it has not expired. */
export async function findIdempotentResponse(db: Executor, accountId: string, key: string, now: number): Promise<StoredResponse | undefined> {
  const row = await db.selectFrom('idempotency_keys').selectAll().where('account_id', '=', accountId).where('key', '=', key).where('expires_at', '>', now).executeTakeFirst();
  return row && { bodyHash: row.body_hash, status: row.response_status, body: JSON.parse(row.response_body), location: row.response_location };
}

/**
 * Claims keys for new responses. A key already held by an unexpired row is not taken (another
 * process won it); an expired row is overwritten. Returns the keys this call now owns.
 */
export async function claimIdempotencyKeys(db: Executor, rows: IdempotencyKeysTable[], now: number): Promise<Set<string>> {
  if (rows.length === 0) return new Set();
  const claimed = await db
    .insertInto('idempotency_keys')
    .values(rows)
    .onConflict((oc) =>
      oc
        .columns(['account_id', 'key'])
        .doUpdateSet((eb) => ({
          body_hash: eb.ref('excluded.body_hash'),
          response_status: eb.ref('excluded.response_status'),
          response_body: eb.ref('excluded.response_body'),
          response_location: eb.ref('excluded.response_location'),
          created_at: eb.ref('excluded.created_at'),
          expires_at: eb.ref('excluded.expires_at'),
        }))
        .where('idempotency_keys.expires_at', '<=', now),
    )
    .returning(['account_id', 'key'])
    .execute();
  return new Set(claimed.map((row) => `${row.account_id}\u0000${row.key}`));
}

/** Housekeeping: expired keys are dead weight (bounded per call to keep transactions short). */
export async function deleteExpiredIdempotencyKeys(db: Executor, now: number, limit = 1000): Promise<number> {
  const result = await db
    .deleteFrom('idempotency_keys')
    .where((eb) => eb.and([eb('expires_at', '<=', now), eb('key', 'in', eb.selectFrom('idempotency_keys as k').select('k.key').where('k.expires_at', '<=', now).limit(limit))]))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
