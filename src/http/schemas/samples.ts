import { buildProcessingResult } from '../../domain/requests/items.js';
import type { Prize } from '../../domain/experiences/experience.js';

/**
 * The OpenAPI document's examples: one story told the same way by every operation — the account
 * `acme` runs the `summer-campaign` experience; order A-1001 became request `req_…`, was registered
 * and processed into one delivered coupon and one canceled gift, and both notifications went to a
 * subscription's URL. Shapes follow the seed contract's tables; the processed body is built by the
 * same function that builds real ones. Every example is checked against its schema by
 * test/http/openapi-examples.test.ts, so an example cannot drift from the document.
 */

const at = (minutes: number) => new Date(Date.UTC(2024, 6, 1, 12, minutes)).toISOString();

export const IDS = {
  account: 'acc_01j9z3k8w0a1b2c3d4e5f6g7h8',
  client: 'cli_01j9z3k8w0a1b2c3d4e5f6g7h8',
  experience: 'exp_01j9z3k8w0a1b2c3d4e5f6g7h8',
  subscription: 'sub_01j9z3k8w0a1b2c3d4e5f6g7h8',
  request: 'req_01j9z3m2r4a1b2c3d4e5f6g7h8',
  registered: 'msg_01j9z3m2s0a1b2c3d4e5f6g7h8',
  processed: 'msg_01j9z3m9t6a1b2c3d4e5f6g7h8',
  /** A token signing key's `kid`: its creation date and 6 random bytes (services/key-store.ts). */
  signingKey: '2024-07-01-q3Zt9WbE',
} as const;

const PRIZES: Prize[] = [
  { id: 'coupon-10', bucket: 'summer-coupons', title: '10 off your next order', description: 'a coupon for the next purchase', value: 10, quantity: 1, kind: 'coupon', stock: 4_999 },
  { id: 'beach-towel', bucket: 'summer-gifts', title: 'Beach towel', description: 'shipped to the customer', value: 25, quantity: 1, kind: 'physical', stock: 0 },
];

export const SAMPLE_SUBSCRIPTION = {
  _id: IDS.subscription,
  accountId: IDS.account,
  event: 'processed-request',
  description: 'Processed requests of the summer campaign',
  active: true,
  experiences: ['summer-campaign'],
  callback: { url: 'https://hooks.example.com/rewards/processed', authorization: { Bearer: '****oken' }, customHeaders: { 'x-tenant': 'acme' } },
  createdAt: '2024-07-01T12:00:00.000Z',
  updatedAt: '2024-07-01T12:00:00.000Z',
};

export const SAMPLE_ACCOUNT = { id: IDS.account, name: 'acme', active: true, isOperator: false, createdAt: at(0) };

export const SAMPLE_CLIENT = {
  client_id: IDS.client,
  accountId: IDS.account,
  scopes: 'subscriptions:read subscriptions:write requests:read requests:write events:read events:write',
  active: true,
  previous_secret_valid_until: null,
  createdAt: at(0),
  updatedAt: at(0),
};

export const SAMPLE_EXPERIENCE = {
  id: IDS.experience,
  accountId: IDS.account,
  name: 'summer-campaign',
  title: 'Summer campaign',
  active: true,
  events: ['purchase'],
  prizes: PRIZES,
  createdAt: at(1),
  updatedAt: at(1),
};

const processing = buildProcessingResult({
  requestId: IDS.request,
  event: 'purchase',
  experience: SAMPLE_EXPERIENCE,
  allocations: ['taken', 'out-of-stock'],
  concludedAt: Date.parse(at(14)),
  codes: { coupon: () => 'SUMMER-7Q2K-9XPD', paymentId: () => '' },
});

export const SAMPLE_REGISTERED_PAYLOAD = { id: IDS.request, rewardValue: 35 };
export const SAMPLE_REJECTED_PAYLOAD = { id: IDS.request, errorCode: 'EXPERIENCE_INACTIVE', message: 'experience "summer-campaign" is not active' };
export const SAMPLE_PROCESSED_PAYLOAD = {
  id: IDS.request,
  ...(processing.rewardValue ? { rewardValue: processing.rewardValue } : {}),
  concluded: at(14),
  delivered: processing.delivered,
  canceled: processing.canceled,
};

export const SAMPLE_REQUEST = {
  id: IDS.request,
  status: 'processed',
  experience: 'summer-campaign',
  event: 'purchase',
  data: { orderId: 'A-1001', amount: 150 },
  processedCallbackUrl: 'https://hooks.example.com/rewards/processed',
  rewardValue: SAMPLE_PROCESSED_PAYLOAD.rewardValue,
  createdAt: at(12),
  updatedAt: at(14),
  registeredAt: at(12),
  concluded: SAMPLE_PROCESSED_PAYLOAD.concluded,
  delivered: SAMPLE_PROCESSED_PAYLOAD.delivered,
  canceled: SAMPLE_PROCESSED_PAYLOAD.canceled,
};

const URL = 'https://hooks.example.com/rewards';

/** The processed notification while it waits for the registered one, which failed its first attempt. */
export const SAMPLE_NOTIFICATION = {
  id: IDS.processed,
  requestId: IDS.request,
  subscriptionId: IDS.subscription,
  event: 'processed-requests',
  url: URL,
  status: 'pending',
  attemptCount: 0,
  nextAttemptAt: null,
  lastStatusCode: null,
  lastError: null,
  createdAt: at(14),
  updatedAt: at(14),
  completedAt: null,
  payload: SAMPLE_PROCESSED_PAYLOAD,
  test: false,
  waitingFor: IDS.registered,
};

/**
 * The headers an attempt of the registered notification sent to the subscription (its Bearer
 * credential and custom header), as the delivery log records them: the signature and the
 * credential masked. Each attempt is signed anew, with its own timestamp.
 */
const sentHeaders = (minutes: number, signatureTail: string) => ({
  'x-tenant': SAMPLE_SUBSCRIPTION.callback.customHeaders['x-tenant'],
  'content-type': 'application/json',
  'user-agent': 'RewardRequestService/1.0',
  'x-webhook-event': 'registered-requests',
  'webhook-id': IDS.registered,
  'webhook-timestamp': String(Date.parse(at(minutes)) / 1000),
  'webhook-signature': `v1,****${signatureTail}`,
  authorization: `Bearer ${SAMPLE_SUBSCRIPTION.callback.authorization.Bearer}`,
});

/** The registered notification's first attempt: the receiver was down for a while and said so with Retry-After. */
const FIRST_ATTEMPT = {
  attempt: 1,
  at: at(12),
  url: URL,
  statusCode: 503,
  latencyMs: 41,
  responseBody: 'upstream unavailable',
  error: 'callback answered HTTP 503',
  outcome: 'retry',
  requestHeaders: sentHeaders(12, 'Yx3Q'),
  retryAfter: '300',
};

export const SAMPLE_DELIVERED_NOTIFICATION = {
  id: IDS.registered,
  requestId: IDS.request,
  subscriptionId: IDS.subscription,
  event: 'registered-requests',
  url: URL,
  status: 'succeeded',
  attemptCount: 2,
  nextAttemptAt: null,
  lastStatusCode: 200,
  lastError: null,
  createdAt: at(12),
  updatedAt: at(17),
  completedAt: at(17),
  payload: SAMPLE_REGISTERED_PAYLOAD,
  test: false,
  attempts: [
    FIRST_ATTEMPT,
    { attempt: 2, at: at(17), url: URL, statusCode: 200, latencyMs: 38, responseBody: '', error: null, outcome: 'succeeded', requestHeaders: sentHeaders(17, 'k9Tw'), retryAfter: null },
  ],
};

/** The same notification between its attempts: the receiver's 503 asked for 300 s, so the second attempt is due five minutes after the first. */
export const SAMPLE_RETRYING_NOTIFICATION = {
  ...SAMPLE_DELIVERED_NOTIFICATION,
  status: 'pending',
  attemptCount: 1,
  nextAttemptAt: at(17),
  lastStatusCode: 503,
  lastError: 'callback answered HTTP 503',
  updatedAt: at(12),
  completedAt: null,
  attempts: [FIRST_ATTEMPT],
};

export const SAMPLE_EVENTS = [
  {
    name: 'em-rota-de-entrega',
    title: 'Em rota de entrega',
    date: at(30),
    refId: 'trx-7781',
    experience: 'summer-campaign',
    data: { trackingCode: 'BR123456789', trackingLink: 'https://tracking.example.com/BR123456789' },
  },
  { name: 'pedido-entregue', title: 'Pedido entregue', date: '2024-07-03T15:10:00.000Z', refId: 'trx-7781', experience: 'summer-campaign' },
];

/** The answers of a list route: the whole list, and one page of it (`?limit=`). */
export function listExamples<T>(item: T): [T[], { data: T[]; nextCursor: string | null }] {
  return [[item], { data: [item], nextCursor: null }];
}
