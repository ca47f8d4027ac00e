import { newId } from '../domain/ids.js';
import { NOTIFICATION_EVENT_OF } from '../domain/notifications/routing.js';
import { sampleNotificationPayload } from '../domain/notifications/test-sample.js';
import { notifyOtherProcesses, type JobSignals } from '../storage/queue/index.js';
import { insertNotifications, newNotificationRow } from '../storage/repositories/notifications.js';
import { DELIVER_NOTIFICATION, enqueueDeliveries } from './schedule-delivery.js';
import { checkCallbackDestinations, getSubscription, type SubscriptionsContext } from './subscriptions.js';

/**
 * POST /subscriptions/{id}/test: one notification of the subscription's event with a sample body,
 * through the normal path (its URL, authorization, custom headers and signature as they are now),
 * marked as a test. It gets one attempt and no retry, and it is sent to an inactive subscription
 * too: that is when people test. A URL the address policy now refuses is a 400 and no call.
 * Answers the notification's id (its `webhook-id`), or undefined when the subscription is not the
 * account's.
 */
export async function sendTestNotification(ctx: SubscriptionsContext & { signals: JobSignals }, accountId: string, subscriptionId: string): Promise<string | undefined> {
  const subscription = await getSubscription(ctx.db, ctx.box, accountId, subscriptionId);
  if (!subscription) return undefined;
  await checkCallbackDestinations({ callback: subscription.callback }, ctx.allowPrivateNetworks, { at: 'callback', what: "the subscription's callback, refused by the address policy" });
  const requestId = newId('req_test', ctx.now);
  const row = newNotificationRow(
    {
      accountId,
      requestId,
      subscriptionId,
      event: NOTIFICATION_EVENT_OF[subscription.event],
      url: subscription.callback.url,
      payload: JSON.stringify(sampleNotificationPayload(NOTIFICATION_EVENT_OF[subscription.event], requestId, ctx.now)),
      test: true,
    },
    ctx.now,
  );
  await ctx.db.transaction().execute(async (tx) => {
    await insertNotifications(tx, [row]);
    await enqueueDeliveries(tx, [{ notificationId: row.id }], { now: ctx.now });
    await notifyOtherProcesses(tx, [DELIVER_NOTIFICATION]);
  });
  ctx.signals.enqueued([DELIVER_NOTIFICATION]);
  return row.id;
}
