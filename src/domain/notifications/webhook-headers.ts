/**
 * Constants of every notification call, shared by the worker's attempt (worker/outbound/deliver.ts)
 * and the deliveries `rewards listen` forwards (services/listen-sessions.ts), so both carry the same.
 */

/** Sent on every outbound call: notifications and the OAuth2 token requests made for them. */
export const USER_AGENT = 'RewardRequestService/1.0';

export const EVENT_TYPE_HEADER = 'x-webhook-event';

/** The delivery log keeps the first 1 KiB of each answer (PRODUCT.md §7). */
export const MAX_LOGGED_RESPONSE_BYTES = 1024;
