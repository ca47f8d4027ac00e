// The subscription pages (list, one subscription, the form): a chunk of their own, fetched when a
// session first opens one, so the first load (the overview, the delivery log) stays within budget.
export { NewSubscription, SubscriptionList, SubscriptionPage } from './subscriptions';
