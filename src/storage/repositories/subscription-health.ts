import type { Executor } from '../database.js';

/** A re-enabled subscription's run of failures starts over (auto-disable counts from its next failure). */
export async function restartFailureRun(db: Executor, subscriptionId: string): Promise<void> {
  await db.updateTable('subscription_health').set({ consecutive_failures: 0, failing_since: null }).where('subscription_id', '=', subscriptionId).execute();
}
