import { setImmediate as yieldToOthers } from 'node:timers/promises';
import { firstIdAt } from '../domain/ids.js';
import type { Db } from '../storage/database.js';
import { dropExpiredLogPartitions } from '../storage/log-partitions.js';
import { deleteEndedNotifications } from '../storage/repositories/notification-retention.js';

const BATCH = 1000;

/**
 * NOTIFICATION_RETENTION: deletes the ended notifications created more than `retentionMs` ago,
 * with their attempts. On PostgreSQL the periods wholly past it go whole, partition by partition
 * (storage/log-partitions.ts); what is left (a period still holding a pending notification, the
 * default partition, SQLite's one table) goes row by row, 1,000 per short transaction, so that no
 * lock or transaction is held long on a busy database. Run by the worker's maintenance
 * (start-worker.ts). 0 keeps everything.
 */
export async function deleteOldNotifications(db: Db, retentionMs: number, now: number, batch = BATCH): Promise<{ deleted: number; dropped: string[]; busy: string[] }> {
  if (retentionMs <= 0) return { deleted: 0, dropped: [], busy: [] };
  const { dropped, busy, rowsBelow } = await dropExpiredLogPartitions(db, firstIdAt('msg', now - retentionMs));
  let deleted = 0;
  for (;;) {
    const count = await deleteEndedNotifications(db, rowsBelow, batch);
    deleted += count;
    if (count < batch) return { deleted, dropped, busy };
    await yieldToOthers();
  }
}
