import type { Executor } from '../database.js';

/** The readiness write: row 1 of readiness_probe, inserted or its time updated. One statement. */
export async function writeReadinessProbe(db: Executor, now: number): Promise<void> {
  await db
    .insertInto('readiness_probe')
    .values({ id: 1, written_at: now })
    .onConflict((oc) => oc.column('id').doUpdateSet({ written_at: now }))
    .execute();
}
