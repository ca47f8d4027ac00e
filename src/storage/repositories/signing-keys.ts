import type { Executor } from '../database.js';
import type { SigningKeysTable } from '../tables/index.js';

export async function insertSigningKey(db: Executor, row: SigningKeysTable): Promise<void> {
  await db.insertInto('signing_keys').values(row).execute();
}

/** Keys that can still verify a token: not expired. Newest first; the first unretired one signs. */
export async function listUsableSigningKeys(db: Executor, now = Date.now()): Promise<SigningKeysTable[]> {
  return db
    .selectFrom('signing_keys')
    .selectAll()
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
    .orderBy('created_at', 'desc')
    .orderBy('kid', 'desc')
    .execute();
}

/** Retires every current signer except `keepKid`; their tokens stay verifiable until `expiresAt`. */
export async function retireSigningKeys(db: Executor, keepKid: string, now: number, expiresAt: number): Promise<void> {
  await db.updateTable('signing_keys').set({ retired_at: now, expires_at: expiresAt }).where('retired_at', 'is', null).where('kid', '!=', keepKid).execute();
}
