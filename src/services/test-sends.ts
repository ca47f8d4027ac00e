import { rateLimited } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import { NOTIFICATION_EVENT_OF } from '../domain/notifications/events.js';
import { sampleNotificationPayload } from '../domain/notifications/test-sample.js';
import { notifyOtherProcesses, type JobSignals } from '../storage/queue/index.js';
import { insertNotifications, newNotificationRow, recentTestSendTimes } from '../storage/repositories/notifications.js';
import { lockSubscription } from '../storage/repositories/subscriptions.js';
import { DELIVERIES } from '../storage/deliveries.js';
import { checkCallbackDestinations, getSubscription, type SubscriptionsContext } from './subscriptions.js';

/** Test sends per subscription in any window of TEST_SEND_WINDOW_MS; more are a 429 with Retry-After. */
export const TEST_SENDS_PER_WINDOW = 10;
export const TEST_SEND_WINDOW_MS = 60_000;

/**
 * POST /subscriptions/{id}/test: one notification of the subscription's event with a sample body,
 * through the normal path (its URL, authorization, custom headers and signature as they are now),
 * marked as a test. It gets one attempt and no retry, and it is sent to an inactive subscription
 * too: that is when people test. A URL the address policy now refuses is a 400 and no call.
 * At most TEST_SENDS_PER_WINDOW in a sliding minute per subscription, counted from the delivery
 * log itself (shared by every API process; the subscription's row is locked meanwhile): test sends
 * are for people, and a script sending them in a loop would only fill the worker with one account's
 * calls. Answers the notification's id (its `webhook-id`), or undefined when the subscription is
 * not the account's.
 */
export async function sendTestNotification(ctx: SubscriptionsContext & { signals: JobSignals }, accountId: string, subscriptionId: string): Promise<string | undefined> {
  const subscription = await getSubscription(ctx.db, ctx.box, accountId, subscriptionId);
  if (!subscription) return undefined;
  await checkCallbackDestinations({ callback: subscription.callback }, ctx.allowPrivateNetworks, { at: 'callback', what: "the subscription's callback, refused by the address policy" });
  const requestId = newId('req_test', ctx.now);
  const event = NOTIFICATION_EVENT_OF[subscription.event];
  const row = newNotificationRow(
    {
      accountId,
      // A disabled-subscriptions notification is about no request (the delivery log shows requestId: null).
      requestId: event === 'disabled-subscriptions' ? '' : requestId,
      subscriptionId,
      event,
      url: subscription.callback.url,
      payload: JSON.stringify(sampleNotificationPayload(event, requestId, ctx.now)),
      test: true,
    },
    ctx.now,
  );
  const sent = await ctx.db.transaction().execute(async (tx) => {
    if (!(await lockSubscription(tx, accountId, subscriptionId))) return false;
    const recent = await recentTestSendTimes(tx, subscriptionId, ctx.now - TEST_SEND_WINDOW_MS, TEST_SENDS_PER_WINDOW);
    if (recent.length >= TEST_SENDS_PER_WINDOW) {
      throw rateLimited(`at most ${TEST_SENDS_PER_WINDOW} test sends a minute per subscription; try again later`, (recent[0]! + TEST_SEND_WINDOW_MS - ctx.now) / 1000);
    }
    await insertNotifications(tx, [row]);
    await notifyOtherProcesses(tx, [DELIVERIES]);
    return true;
  });
  if (!sent) return undefined;
  ctx.signals.enqueued([DELIVERIES]);
  return row.id;
}
