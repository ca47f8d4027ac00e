import { setImmediate as yieldToOthers } from 'node:timers/promises';
import { firstIdAt } from '../domain/ids.js';
import type { Db } from '../storage/database.js';
import { deleteEndedNotifications } from '../storage/repositories/notification-retention.js';

const BATCH = 1000;

/**
 * NOTIFICATION_RETENTION: deletes the ended notifications created more than `retentionMs` ago,
 * with their attempts and dead delivery jobs, 1,000 per short transaction so that no lock or
 * transaction is held long on a busy database. Run by the worker every ten minutes
 * (start-worker.ts, purgeExpired). Returns how many were deleted. 0 keeps everything.
 */
export async function deleteOldNotifications(db: Db, retentionMs: number, now: number, batch = BATCH): Promise<number> {
  if (retentionMs <= 0) return 0;
  const beforeId = firstIdAt('msg', now - retentionMs);
  let total = 0;
  for (;;) {
    const deleted = await deleteEndedNotifications(db, beforeId, batch);
    total += deleted;
    if (deleted < batch) return total;
    await yieldToOthers();
  }
}
