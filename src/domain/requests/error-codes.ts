/**
 * The `errorCode` catalogue (PRODUCT.md §6, docs/requests.md). Registration codes end a request
 * as `rejected` and are notified in `registered-requests`; the *_FAILED codes mark a request
 * `failed` after the worker exhausted its internal retries, and are never notified.
 */
export const REQUEST_ERROR_CODES = {
  ACCOUNT_INACTIVE: 'the account is inactive: an operator deactivated it',
  EXPERIENCE_NOT_FOUND: 'no experience with this name exists for the account',
  EXPERIENCE_INACTIVE: 'the experience is not active',
  EVENT_NOT_ALLOWED: 'the event is not one of the events the experience accepts',
  INVALID_DATA: '`data` must be a JSON object',
  REGISTRATION_FAILED: 'registration failed repeatedly on an internal error',
  PROCESSING_FAILED: 'processing failed repeatedly on an internal error',
} as const;

export type RequestErrorCode = keyof typeof REQUEST_ERROR_CODES;

/** `reasonCode` of a canceled item, with its `reason`. */
export const CANCEL_REASONS = {
  OUT_OF_STOCK: { reasonCode: 1, reason: 'out of stock' },
  PRIZE_UNAVAILABLE: { reasonCode: 2, reason: 'prize no longer offered by the experience' },
  ACCOUNT_INACTIVE: { reasonCode: 3, reason: 'account inactive' },
} as const;
