import type { SecretBox } from '../domain/crypto/secret-box.js';
import { authorizationPurpose } from '../storage/repositories/subscriptions.js';
import type { Db } from '../storage/database.js';
import { KEY_PURPOSE } from './key-store.js';
import { secretPurpose } from './signing-secrets.js';

/** Every column that holds a value sealed with SECRET_KEY, with the purpose it was sealed for. */
const SEALED_COLUMNS = [
  { table: 'signing_keys', id: 'kid', column: 'private_key_encrypted', purpose: () => KEY_PURPOSE },
  { table: 'webhook_signing_secrets', id: 'id', column: 'secret_encrypted', purpose: secretPurpose },
  { table: 'subscriptions', id: 'id', column: 'callback_authorization_encrypted', purpose: authorizationPurpose },
] as const;

export type ReencryptCounts = Record<(typeof SEALED_COLUMNS)[number]['table'], { checked: number; reencrypted: number }>;

/**
 * `rewards secrets reencrypt`: seals every stored secret with the current SECRET_KEY, reading
 * those an older key sealed with SECRET_KEY_PREVIOUS. In batches, each its own short transaction,
 * walking each table in id order; a row is only rewritten if its value is still the one read (a
 * concurrent rotation or edit wins). Safe to interrupt and to run again: a second run finds
 * nothing to do. Throws if a value opens with none of the keys.
 */
export async function reencryptSecrets(db: Db, box: SecretBox, options: { batchSize?: number } = {}): Promise<ReencryptCounts> {
  const batchSize = options.batchSize ?? 500;
  const counts = {} as ReencryptCounts;
  for (const { table, id, column, purpose } of SEALED_COLUMNS) {
    const tally = (counts[table] = { checked: 0, reencrypted: 0 });
    let after = '';
    for (;;) {
      // The column names come from SEALED_COLUMNS above, never from input.
      const rows = (await db
        .selectFrom(table as 'subscriptions')
        .select([`${id} as id` as 'id', `${column} as sealed` as 'callback_authorization_encrypted'])
        .where(id as 'id', '>', after)
        .where(column as 'callback_authorization_encrypted', 'is not', null)
        .orderBy(id as 'id')
        .limit(batchSize)
        .execute()) as unknown as Array<{ id: string; sealed: string }>;
      if (rows.length === 0) break;
      await db.transaction().execute(async (tx) => {
        for (const row of rows) {
          const resealed = box.reseal(row.sealed, purpose(row.id));
          if (resealed === undefined) continue;
          const updated = await tx
            .updateTable(table as 'subscriptions')
            .set({ [column]: resealed } as never)
            .where(id as 'id', '=', row.id)
            .where(column as 'callback_authorization_encrypted', '=', row.sealed)
            .executeTakeFirst();
          tally.reencrypted += Number(updated.numUpdatedRows);
        }
      });
      tally.checked += rows.length;
      after = rows[rows.length - 1]!.id;
    }
  }
  return counts;
}
