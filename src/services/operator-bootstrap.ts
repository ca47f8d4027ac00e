import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Db } from '../storage/database.js';
import { ensurePrivateDirectory, type FileModeLog } from '../storage/private-files.js';
import { newId } from '../domain/ids.js';
import { SCOPES } from '../domain/tokens/scopes.js';
import { createClient } from './accounts.js';

const OPERATOR_ACCOUNT_NAME = 'operator';

export interface OperatorBootstrap {
  created: boolean;
  credentialsFile?: string;
}

/**
 * On first start creates the operator account and an operator client holding every scope, and
 * writes its credentials to DATA_DIR/operator-credentials.json (0600, in a 0700 DATA_DIR). Several
 * processes starting together race safely: only the one whose insert wins creates the client.
 */
export async function ensureOperator(db: Db, dataDir: string, tokenUrl: string, options: { now?: number; log?: FileModeLog } = {}): Promise<OperatorBootstrap> {
  const now = options.now ?? Date.now();
  const existing = await db.selectFrom('accounts').select('id').where('is_operator', '=', 1).executeTakeFirst();
  if (existing) return { created: false };
  const issued = await db.transaction().execute(async (tx) => {
    const accountId = newId('acc', now);
    const inserted = await tx
      .insertInto('accounts')
      .values({ id: accountId, name: OPERATOR_ACCOUNT_NAME, is_operator: 1, active: 1, created_at: now })
      .onConflict((oc) => oc.column('name').doNothing())
      .executeTakeFirst();
    if (Number(inserted.numInsertedOrUpdatedRows ?? 0n) === 0) return undefined;
    return createClient(tx, accountId, [...SCOPES], now);
  });
  if (!issued) return { created: false };
  ensurePrivateDirectory(dataDir, options.log);
  const credentialsFile = join(dataDir, 'operator-credentials.json');
  const body = {
    accountId: issued.client.accountId,
    client_id: issued.client.clientId,
    client_secret: issued.clientSecret,
    scopes: issued.client.scopes.join(' '),
    token_url: tokenUrl,
  };
  writeFileSync(credentialsFile, `${JSON.stringify(body, null, 2)}\n`, { mode: 0o600 });
  chmodSync(credentialsFile, 0o600);
  return { created: true, credentialsFile };
}
