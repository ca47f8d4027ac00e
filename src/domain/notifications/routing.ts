import type { NotificationEvent } from './events.js';

export interface RoutableRequest {
  experience: string;
  registeredCallbackUrl?: string | null;
  processedCallbackUrl?: string | null;
}

export interface RoutableSubscription {
  id: string;
  active: boolean;
  experiences: string[];
}

export type NotificationTarget = { kind: 'request-url'; url: string } | { kind: 'subscription'; subscriptionId: string };

/**
 * Where a notification goes (PRODUCT.md §7). The most specific level wins:
 *  1. the request's own callback URL for the event;
 *  2. else the account's subscriptions for the event that list the request's experience — every
 *     active one gets a delivery; if all of them are inactive nothing is sent (this is how a client
 *     skips one event for one experience);
 *  3. else the account's subscriptions for the event with no experiences (account-wide): each
 *     active one gets a delivery.
 */
export function routeNotification(event: NotificationEvent, request: RoutableRequest, subscriptionsForEvent: readonly RoutableSubscription[]): NotificationTarget[] {
  const ownUrl = event === 'registered-requests' ? request.registeredCallbackUrl : request.processedCallbackUrl;
  if (ownUrl) return [{ kind: 'request-url', url: ownUrl }];

  const forExperience = subscriptionsForEvent.filter((s) => s.experiences.includes(request.experience));
  const level = forExperience.length > 0 ? forExperience : subscriptionsForEvent.filter((s) => s.experiences.length === 0);
  return level.filter((s) => s.active).map((s) => ({ kind: 'subscription', subscriptionId: s.id }));
}
