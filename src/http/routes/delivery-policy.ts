import type { TypedApp } from '../typed-app.js';
import type { Config } from '../../config.js';
import { MAX_RETRY_AFTER_MS, RETRY_AFTER_STATUSES, RETRY_JITTER } from '../../domain/notifications/retry-policy.js';
import { TEST_SEND_WINDOW_MS, TEST_SENDS_PER_WINDOW } from '../../services/test-sends.js';
import { DeliveryPolicySchema, type DeliveryPolicy } from '../schemas/delivery-policy.js';

/**
 * The delivery policy in effect, from the configuration this process was started with and the
 * constants the worker applies (retry-policy.ts, test-sends.ts). The API and worker processes of a
 * deployment read the same settings (docs/deployment.md), so this is what the worker does.
 */
function deliveryPolicyOf(config: Config): DeliveryPolicy {
  return {
    maxAttempts: config.retryMaxAttempts,
    retryIntervalMs: config.retryIntervalMs,
    retryJitter: RETRY_JITTER,
    retryAfterStatuses: [...RETRY_AFTER_STATUSES],
    retryAfterCapMs: MAX_RETRY_AFTER_MS,
    timeoutMs: config.callbackTimeoutMs,
    disableAfterMs: config.subscriptionDisableAfterMs === 0 ? null : config.subscriptionDisableAfterMs,
    testSendsPerMinute: Math.round((TEST_SENDS_PER_WINDOW * 60_000) / TEST_SEND_WINDOW_MS),
    circuitBreaker: config.circuitBreaker.failures === 0 ? null : { ...config.circuitBreaker },
    // The addresses receivers must admit, never the proxy (OUTBOUND_PROXY) itself.
    sourceAddresses: config.outboundSourceAddresses.length === 0 ? null : [...config.outboundSourceAddresses],
  };
}

/** GET /delivery-policy: retries, timeouts and auto-disable, which a hosted client cannot read from the configuration. */
export async function deliveryPolicyRoute(app: TypedApp, deps: { config: Config }): Promise<void> {
  // Computed once: the configuration is frozen for the life of the process.
  const policy = deliveryPolicyOf(deps.config);
  app.get(
    '/delivery-policy',
    {
      // Any valid token: every client's requests and subscriptions lead to deliveries.
      config: { scope: 'authenticated' },
      schema: {
        tags: ['notifications'],
        operationId: 'getDeliveryPolicy',
        summary: 'How notifications are delivered and retried here: attempts, retry interval, timeout, auto-disable',
        description:
          'The delivery rules of this deployment, as its operator configured them: how many attempts a notification gets, how far apart, how long a call may take, ' +
          'which `Retry-After` answers are honoured, when a failing subscription is switched off, and the addresses calls come from, for a firewall (docs/delivery.md). ' +
          'The same for every account; any valid token may read it.',
        security: [{ bearerAuth: [] }],
        response: { 200: DeliveryPolicySchema },
      },
    },
    async () => policy,
  );
}
