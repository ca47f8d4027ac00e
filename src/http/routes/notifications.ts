import type { TypedApp } from '../typed-app.js';
import { toAttemptResource, toNotificationResource } from '../../domain/notifications/notification-view.js';
import { getNotification, listNotifications, retryNotification, type NotificationsContext } from '../../services/notifications.js';
import { createdRange } from '../schemas/paging.js';
import { NotificationDetailSchema, NotificationListQuerySchema, NotificationListSchema, NotificationParamsSchema, NotificationSchema } from '../schemas/notification.js';

const TAGS = ['notifications'];
const SECURITY = [{ bearerAuth: [] }];

/**
 * The delivery log: every notification of the account with its attempts, and manual retry.
 * Reading needs `subscriptions:read`, retrying `subscriptions:write` (both are webhook management).
 */
export async function notificationRoutes(app: TypedApp, deps: NotificationsContext): Promise<void> {
  app.get(
    '/notifications',
    {
      config: { scope: 'subscriptions:read' },
      schema: {
        tags: TAGS,
        security: SECURITY,
        operationId: 'listNotifications',
        description:
          'Every notification sent or to be sent to the account\'s callbacks (test sends included, with `"test": true`), newest first, filtered by ' +
          '`subscriptionId`, `requestId`, `status`, `event`, `listen` (the copies forwarded by `rewards listen`: `include` by default, `exclude`, `only`) and a range of creation times (`since` inclusive, `until` exclusive), in any combination; ' +
          'page with `limit` and the `nextCursor` of the previous page as `cursor`. `?subscriptionId=…&status=pending` and `…&status=failed` list exactly ' +
          'the notifications that GET /subscriptions/{id}/stats counts as `pending` and `failed`.',
        summary: 'The delivery log, newest first, with cursor paging',
        querystring: NotificationListQuerySchema,
        response: { 200: NotificationListSchema },
      },
    },
    async (request) => {
      const { requestId, subscriptionId, status, event, listen, cursor } = request.query;
      const limit = request.query.limit ?? 50;
      const { notifications, nextCursor } = await listNotifications(deps, {
        accountId: request.auth.accountId,
        // An empty value filters nothing, as before these filters were written out exactly.
        requestId: requestId || undefined,
        subscriptionId: subscriptionId || undefined,
        status,
        event,
        listenCopies: listen === 'include' ? undefined : listen,
        ...createdRange(request.query),
        cursor,
        limit,
      });
      return { data: notifications.map(toNotificationResource), nextCursor };
    },
  );

  app.get(
    '/notifications/:notificationId',
    {
      config: { scope: 'subscriptions:read' },
      schema: {
        tags: TAGS,
        security: SECURITY,
        operationId: 'getNotification',
        description: "The notification, its payload and every delivery attempt with the receiver's answer.",
        summary: 'One notification with every attempt',
        params: NotificationParamsSchema,
        response: { 200: NotificationDetailSchema },
      },
    },
    async (request) => {
      const { notification, attempts } = await getNotification(deps, request.auth.accountId, request.params.notificationId);
      return { ...toNotificationResource(notification), attempts: attempts.map(toAttemptResource) };
    },
  );

  app.post(
    '/notifications/:notificationId/retry',
    {
      config: { scope: 'subscriptions:write', problems: { 409: 'a copy forwarded by `rewards listen` (url `listen:…`): it is not retried' } },
      schema: {
        tags: TAGS,
        security: SECURITY,
        operationId: 'retryNotification',
        description:
          "Queues one extra delivery attempt now, whatever the notification's state; the receiver deduplicates on `webhook-id`. It is not one of the RETRY_MAX_ATTEMPTS automatic attempts and does not move their schedule. A pending notification (waiting for its next automatic attempt): if the extra attempt succeeds it is delivered; if it fails it stays pending with the automatic attempts it had left, its next one due when it was due before (at once if that time has passed). A failed or delivered notification gets exactly this one attempt: failed again if it fails, succeeded if it succeeds. An attempt in flight is not doubled: the retry then changes nothing.",
        summary: 'Send one extra attempt now (also for a failed or delivered notification)',
        params: NotificationParamsSchema,
        response: { 202: NotificationSchema },
      },
    },
    async (request, reply) => {
      const updated = await retryNotification(deps, request.auth.accountId, request.params.notificationId);
      return reply.code(202).send(toNotificationResource(updated));
    },
  );
}
