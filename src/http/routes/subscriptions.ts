import type { TypedApp } from '../typed-app.js';
import { Type } from 'typebox';
import type { Config } from '../../config.js';
import type { SecretBox } from '../../domain/crypto/secret-box.js';
import { toRotatedSecretResource, toSigningSecretResource, toSubscriptionResource } from '../../domain/subscriptions/mapping.js';
import { loadSigningSecrets, parseRotationOverlap, rotateSigningSecret } from '../../services/signing-secrets.js';
import { sendTestNotification, TEST_SENDS_PER_WINDOW } from '../../services/test-sends.js';
import { RECOVER_SWITCHED_OFF, recoverNotifications, type RecoveryContext } from '../../services/recover-notifications.js';
import { getEndpointStats } from '../../services/endpoint-health.js';
import type { ReplicaReads } from '../../services/replica-reads.js';
import { isStatsWindow, STATS_WINDOWS } from '../../domain/notifications/endpoint-health.js';
import { createSubscription, deleteSubscription, getSubscription, listSubscriptions, updateSubscription, type SubscriptionsContext } from '../../services/subscriptions.js';
import { ACCEPTED_EVENT_NAMES, normalizeEvent } from '../../domain/subscriptions/validation.js';
import { invalid, notFound } from '../../domain/errors.js';
import { SAMPLE_SUBSCRIPTION } from '../schemas/samples.js';
import {
  CreatedSubscriptionSchema,
  EndpointStatsSchema,
  StatsQuerySchema,
  OperatorQuerySchema,
  ROTATION_OVERLAP_DOC,
  RotateSecretBodySchema,
  SigningSecretSchema,
  SubscriptionBodySchema,
  SubscriptionListQuerySchema,
  SubscriptionParamsSchema,
  SubscriptionSchema,
} from '../schemas/subscription.js';

/**
 * Webhook subscriptions (PRODUCT.md §3, §5): list, create, read, update (members omitted are
 * kept), delete, and the subscription's signing secret. Another account's subscription is a 404.
 */

const TAGS = ['subscriptions'];
const SECURITY = [{ bearerAuth: [] }];

interface SubscriptionRouteDeps extends RecoveryContext, ReplicaReads {
  box: SecretBox;
  config: Pick<Config, 'callbackAllowPrivateNetworks'>;
}

function context(deps: SubscriptionRouteDeps): SubscriptionsContext {
  return { db: deps.db, box: deps.box, allowPrivateNetworks: deps.config.callbackAllowPrivateNetworks, now: deps.clock() };
}

export async function subscriptionRoutes(app: TypedApp, deps: SubscriptionRouteDeps): Promise<void> {
  const read = { scope: 'subscriptions:read' as const };
  const write = { scope: 'subscriptions:write' as const };

  app.get(
    '/subscriptions',
    {
      config: read,
      schema: {
        tags: TAGS,
        operationId: 'listSubscriptions',
        description: "Filter by `event`, `experience` and `active`. Callback credentials are returned masked. Operators may list another account's with `?accountId=`.",
        summary: 'The account’s subscriptions, oldest first',
        security: SECURITY,
        querystring: SubscriptionListQuerySchema,
        response: { 200: Type.Array(SubscriptionSchema, { examples: [[SAMPLE_SUBSCRIPTION]] }) },
      },
    },
    async (request) => {
      const { event, experience, active } = request.query;
      const singular = event === undefined ? undefined : normalizeEvent(event);
      if (event !== undefined && !singular) {
        const message = `must be one of ${ACCEPTED_EVENT_NAMES.join(', ')}`;
        throw invalid('request querystring', [{ path: 'querystring.event', message }]);
      }
      const subscriptions = await listSubscriptions(deps.db, deps.box, request.auth.accountId, { event: singular, experience, active });
      return subscriptions.map(toSubscriptionResource);
    },
  );

  app.post(
    '/subscriptions',
    {
      config: { ...write, secretBearing: true, problems: { 409: 'the account has as many subscriptions as it may' } },
      schema: {
        tags: TAGS,
        operationId: 'createSubscription',
        description:
          "Binds one event (`registered-request` or `processed-request`, or an operational event: `disabled-subscription`, `failed-notification`) to one callback for the account. `event` and `callback` are required; `active` defaults to true; `experiences: []` means every experience (an operational event takes none). The response is the only place, with GET /subscriptions/{id}/secret, where the signing secret is shown. The secret is the callback URL's: a subscription created at a URL where the account already has one gets the same secret.",
        summary: 'Create a subscription; the response carries its signing secret',
        security: SECURITY,
        querystring: OperatorQuerySchema,
        body: SubscriptionBodySchema,
        response: { 201: CreatedSubscriptionSchema },
      },
    },
    async (request, reply) => {
      const { subscription, signingSecret } = await createSubscription(context(deps), request.auth.accountId, request.body);
      reply.code(201).header('location', `${request.routeOptions.url}/${subscription.id}`);
      return { ...toSubscriptionResource(subscription), secret: signingSecret.secret };
    },
  );

  app.get(
    '/subscriptions/:subscriptionId',
    {
      config: read,
      schema: {
        tags: TAGS,
        operationId: 'getSubscription',
        description: "Another account's subscription is a 404. Callback credentials are returned masked.",
        summary: 'One subscription',
        security: SECURITY,
        params: SubscriptionParamsSchema,
        querystring: OperatorQuerySchema,
        response: { 200: SubscriptionSchema },
      },
    },
    async (request) => {
      const subscription = await getSubscription(deps.db, deps.box, request.auth.accountId, request.params.subscriptionId);
      if (!subscription) throw notFound('subscription');
      return toSubscriptionResource(subscription);
    },
  );

  app.put(
    '/subscriptions/:subscriptionId',
    {
      config: write,
      schema: {
        tags: TAGS,
        operationId: 'updateSubscription',
        description:
          "Members given replace the stored ones, members omitted are kept (the seed's sample update omits `event`); `authorization: null` removes the callback's credentials. Read-only members (`_id`, `accountId`, timestamps) may be echoed back unchanged.",
        summary: 'Update a subscription: members given replace the stored ones, members omitted are kept',
        security: SECURITY,
        params: SubscriptionParamsSchema,
        querystring: OperatorQuerySchema,
        body: SubscriptionBodySchema,
        response: { 200: SubscriptionSchema },
      },
    },
    async (request) => {
      const subscription = await updateSubscription(context(deps), request.auth.accountId, request.params.subscriptionId, request.body);
      if (!subscription) throw notFound('subscription');
      return toSubscriptionResource(subscription);
    },
  );

  app.delete(
    '/subscriptions/:subscriptionId',
    {
      config: write,
      schema: {
        tags: TAGS,
        operationId: 'deleteSubscription',
        description: "Deletes the subscription and its signing secrets. Another account's subscription is a 404.",
        summary: 'Delete a subscription and its signing secrets',
        security: SECURITY,
        params: SubscriptionParamsSchema,
        querystring: OperatorQuerySchema,
        response: { 204: Type.Null() },
      },
    },
    async (request, reply) => {
      if (!(await deleteSubscription(deps.db, request.auth.accountId, request.params.subscriptionId))) throw notFound('subscription');
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/subscriptions/:subscriptionId/stats',
    {
      config: read,
      schema: {
        tags: TAGS,
        operationId: 'getSubscriptionStats',
        summary: 'The endpoint’s health over a window',
        description:
          'Over the window: delivery attempts by outcome, their success rate and latency percentiles, and the same as a time series (`series`: ' +
          '`1h` in 12 buckets of 5 minutes, `24h` in 24 of 1 hour, `7d` in 28 of 6 hours, oldest first, every bucket present), read from a rollup ' +
          'kept with the attempt log in five-minute buckets (the window ends with the one in progress: `1h` covers the last 55 to 60 minutes; the ' +
          'series adds up to the totals; percentiles are estimated from a histogram). Test sends do not count there. Not limited to the window: the ' +
          'last success and failure and the current run of failed attempts. Now: the notifications `pending` and `failed`, counted exactly as ' +
          '`GET /notifications?subscriptionId={id}&status=pending` (or `failed`) lists them, test sends included. Attempt figures count attempts, ' +
          '`pending` and `failed` count notifications.',
        security: SECURITY,
        params: SubscriptionParamsSchema,
        querystring: StatsQuerySchema,
        response: { 200: EndpointStatsSchema },
      },
    },
    async (request) => {
      const window = request.query.window ?? '24h';
      if (!isStatsWindow(window)) throw invalid('request querystring', [{ path: 'querystring.window', message: `must be one of ${Object.keys(STATS_WINDOWS).join(', ')}` }]);
      const stats = await getEndpointStats(deps, request.auth.accountId, request.params.subscriptionId, window, deps.clock());
      if (!stats) throw notFound('subscription');
      return stats;
    },
  );

  app.get(
    '/subscriptions/:subscriptionId/secret',
    {
      config: { ...read, secretBearing: true },
      schema: {
        tags: TAGS,
        operationId: 'getSubscriptionSecret',
        description:
          "The Standard Webhooks secret (`whsec_…`) that signs this subscription's notifications and every other call of the account to its callback URL, shown again whenever asked (the console's Reveal), " +
          'and, while a replaced secret still signs after a rotation, when it stops (`previousSecretExpiresAt`).',
        summary: 'The subscription’s current signing secret',
        security: SECURITY,
        params: SubscriptionParamsSchema,
        querystring: OperatorQuerySchema,
        response: { 200: SigningSecretSchema },
      },
    },
    async (request) => {
      const { accountId } = request.auth;
      const { subscriptionId } = request.params;
      if (!(await getSubscription(deps.db, deps.box, accountId, subscriptionId))) throw notFound('subscription');
      const secrets = await loadSigningSecrets(deps.db, deps.box, { subscriptionId }, deps.clock());
      return toSigningSecretResource(secrets);
    },
  );

  app.post(
    '/subscriptions/:subscriptionId/secret/rotate',
    {
      config: { ...write, secretBearing: true, optionalBody: true },
      schema: {
        tags: TAGS,
        operationId: 'rotateSubscriptionSecret',
        description: `A new signing secret for the subscription's callback URL: every subscription of the account at that URL gets it. ${ROTATION_OVERLAP_DOC}`,
        summary: 'Replace the signing secret; the previous one keeps signing for the overlap chosen (default 24 h)',
        security: SECURITY,
        params: SubscriptionParamsSchema,
        querystring: OperatorQuerySchema,
        body: RotateSecretBodySchema,
        response: { 200: SigningSecretSchema },
      },
    },
    async (request) => {
      const { accountId } = request.auth;
      const { subscriptionId } = request.params;
      const overlapMs = parseRotationOverlap(request.body.overlap, 'body.overlap');
      const rotated = await rotateSigningSecret(deps.db, deps.box, { accountId, subscriptionId }, deps.clock(), overlapMs);
      if (!rotated) throw notFound('subscription');
      return toRotatedSecretResource(rotated);
    },
  );

  app.post(
    '/subscriptions/:subscriptionId/test',
    {
      config: { ...write, problems: { 429: `more than ${TEST_SENDS_PER_WINDOW} test sends of this subscription in the last minute; Retry-After says when the next one is allowed` } },
      schema: {
        tags: TAGS,
        operationId: 'testSubscription',
        summary: 'Send a test notification',
        description:
          "One notification of the subscription's event with a sample body of the contract's shape (ids `req_test_…`), " +
          'through the normal path: URL, authorization, custom headers and signature as they are now. It carries `x-webhook-test: true`, ' +
          'appears in the delivery log with `"test": true`, gets one attempt and no retry, and is sent to an inactive subscription too. ' +
          'A callback URL the address policy now refuses is a 400, and nothing is sent. ' +
          `At most ${TEST_SENDS_PER_WINDOW} test sends per subscription in any minute: more are a 429 with \`Retry-After\`.`,
        security: SECURITY,
        params: SubscriptionParamsSchema,
        querystring: OperatorQuerySchema,
        response: {
          202: Type.Object(
            { notificationId: Type.String({ description: 'the delivery log entry; also the webhook-id' }) },
            { title: 'TestSendAccepted', examples: [{ notificationId: 'msg_01j9z3q7v2a1b2c3d4e5f6g7h8' }] },
          ),
        },
      },
    },
    async (request, reply) => {
      const notificationId = await sendTestNotification({ ...context(deps), signals: deps.signals }, request.auth.accountId, request.params.subscriptionId);
      if (!notificationId) throw notFound('subscription');
      return reply.code(202).send({ notificationId });
    },
  );

  app.post(
    '/subscriptions/:subscriptionId/recover',
    {
      config: { ...write, problems: { 409: `${RECOVER_SWITCHED_OFF} (while it is off, nothing is sent to it, so recovered notifications would fail again at once)` } },
      schema: {
        tags: TAGS,
        operationId: 'recoverSubscription',
        summary: 'Send one more attempt of every notification that failed in a window',
        description:
          'Every notification of the subscription that ended `failed` with its completion time in [`since`, `until`) gets one new attempt now, ' +
          'with its original `webhook-id` and body (receivers deduplicate by `webhook-id`); test sends are left out. `until` defaults to now and ' +
          'is capped at the time of the call; the window is at most 30 days. A notification whose last failure used up RETRY_MAX_ATTEMPTS fails ' +
          'again if this attempt fails. The notifications are taken in batches of 1,000, each in its own short transaction; a concurrent call ' +
          'for an overlapping window skips what this one took, so nothing is sent twice. Answers how many notifications were taken. ' +
          'A switched-off subscription (`active: false`) is a 409: switch it on (`PUT` with `"active": true`), then recover; nothing is sent to it while it is off.',
        security: SECURITY,
        params: SubscriptionParamsSchema,
        querystring: OperatorQuerySchema,
        body: Type.Object(
          {
            since: Type.String({ format: 'date-time', description: 'RFC 3339; failures completed at or after it' }),
            until: Type.Optional(Type.String({ format: 'date-time', description: 'RFC 3339; failures completed before it (default and cap: now)' })),
          },
          { additionalProperties: false, title: 'RecoveryWindow', examples: [{ since: '2024-07-01T00:00:00Z', until: '2024-07-01T06:00:00Z' }, { since: '2024-07-01T00:00:00Z' }] },
        ),
        response: { 202: Type.Object({ recovered: Type.Integer({ minimum: 0, description: 'notifications given one more attempt' }) }, { title: 'RecoveryResult', examples: [{ recovered: 1284 }] }) },
      },
    },
    async (request, reply) => {
      const { since, until } = request.body;
      const recovered = await recoverNotifications({ db: deps.db, signals: deps.signals, clock: deps.clock }, request.auth.accountId, request.params.subscriptionId, { since, until });
      if (recovered === undefined) throw notFound('subscription');
      return reply.code(202).send({ recovered });
    },
  );
}
