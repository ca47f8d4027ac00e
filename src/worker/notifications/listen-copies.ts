import type { OutcomeRecorder } from '../outcome-recorder.js';
import type { Tx } from '../../storage/database.js';
import { listenUrl, newSchedule } from '../../storage/deliveries.js';
import { listLiveListenSessions, type ListenSession } from '../../storage/repositories/listen-sessions.js';
import { insertNotifications, newNotificationRow } from '../../storage/repositories/notifications.js';
import { notificationEventOf, type OutcomeRecorderDeps } from './record-notifications.js';
import { LISTEN_SESSIONS_REFRESH_MS } from '../../services/listen-sessions.js';

/**
 * Listen copies (docs/delivery.md, "Listen copies"): in the transaction that records a batch's
 * outcomes, each outcome of an account with a live `rewards listen` session gets one more
 * notification per such session whose events include it: the same body, url `listen:<session>`,
 * no subscription, and never due (`run_at` null: the worker never claims it; the session's CLI
 * leases it through the API). Written whether or not the outcome went to any receiver: a developer
 * listens before a receiver exists.
 *
 * What it costs without sessions: the process reads the whole `listen_sessions` table (only live
 * sessions and ended ones not yet swept) at most once per LISTEN_SESSIONS_REFRESH_MS, in the
 * transaction of the batch that finds its read stale; batches in between run no statement at all.
 */
export function listenCopyRecorder(deps: OutcomeRecorderDeps): OutcomeRecorder {
  let read: { at: number; byAccount: Map<string, ListenSession[]> } | undefined;
  const sessionsFor = async (tx: Tx): Promise<Map<string, ListenSession[]>> => {
    const at = performance.now();
    if (!read || at - read.at >= LISTEN_SESSIONS_REFRESH_MS) {
      const byAccount = new Map<string, ListenSession[]>();
      for (const session of await listLiveListenSessions(tx, deps.clock())) byAccount.set(session.accountId, [...(byAccount.get(session.accountId) ?? []), session]);
      read = { at, byAccount };
    }
    return read.byAccount;
  };
  return async (tx, outcomes) => {
    const sessions = await sessionsFor(tx);
    if (sessions.size === 0) return;
    const now = deps.clock();
    const rows = [];
    for (const outcome of outcomes) {
      const event = notificationEventOf(outcome);
      for (const session of sessions.get(outcome.request.accountId) ?? []) {
        if (session.expiresAt <= now || !session.events.includes(event)) continue;
        const row = newNotificationRow(
          { accountId: session.accountId, requestId: outcome.request.id, subscriptionId: null, event, url: listenUrl(session.id), payload: JSON.stringify(outcome.payload) },
          now,
        );
        rows.push({ ...row, ...newSchedule(null) });
      }
    }
    await insertNotifications(tx, rows);
  };
}
