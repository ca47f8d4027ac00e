import type { SecretBox } from '../domain/crypto/secret-box.js';
import { conflict, invalid } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import { checkCallbackTargets } from '../net/callback-url.js';
import type { Db, Executor } from '../storage/database.js';
import {
  countSubscriptions,
  deleteSubscriptionRow,
  encryptAuthorization,
  findSubscription,
  insertSubscription,
  listSubscriptionRows,
  lockAccountSubscriptions,
  rowToSubscription,
  subscriptionToRow,
  updateSubscriptionRow,
} from '../storage/repositories/subscriptions.js';
import { restartFailureRun } from '../storage/repositories/subscription-health.js';
import { authorizationUrls, restoreMaskedSecrets } from '../domain/subscriptions/authorization.js';
import { createSigningSecret, moveSigningSecret, type SigningSecret } from './signing-secrets.js';
import { liftsRateLimit, releaseRateLimitedDeliveries } from './rate-limit.js';
import type { SubscriptionEvent } from '../domain/notifications/events.js';
import { LIMITS, type FieldError, type Subscription, type SubscriptionBody, type SubscriptionChanges } from '../domain/subscriptions/types.js';
import { parseSubscriptionBody, validateEventExperiences } from '../domain/subscriptions/validation.js';

/** The use cases behind the subscription endpoints; transactions open here. */

export interface SubscriptionsContext {
  db: Db;
  box: SecretBox;
  /** CALLBACK_ALLOW_PRIVATE_NETWORKS */
  allowPrivateNetworks: boolean;
  now: number;
}

function throwIfAny(errors: FieldError[], what = 'request body'): void {
  if (errors.length > 0) throw invalid(what, errors);
}

/**
 * SSRF check of every URL the callback makes the service call: at save time (a request body's
 * members), and before a test send (the policy or DNS may have changed since): `at` prefixes the
 * error paths and `what` names the refused thing.
 */
export async function checkCallbackDestinations(
  changes: SubscriptionChanges,
  allowPrivate: boolean,
  { at = 'body.callback', what = 'request body' }: { at?: string; what?: string } = {},
): Promise<void> {
  if (!changes.callback) return;
  const targets = [{ path: `${at}.url`, url: changes.callback.url }, ...authorizationUrls(changes.callback.authorization, `${at}.authorization`)];
  await checkCallbackTargets(targets, allowPrivate, what);
}

export interface CreatedSubscription {
  subscription: Subscription;
  signingSecret: SigningSecret;
}

export async function createSubscription(ctx: SubscriptionsContext, accountId: string, body: SubscriptionBody): Promise<CreatedSubscription> {
  const { changes, errors } = parseSubscriptionBody(body, 'create', { accountId });
  throwIfAny(errors);
  const callback = changes.callback!;
  throwIfAny(restoreMaskedSecrets(callback.authorization, callback.url, null, undefined, 'body.callback.authorization'));
  await checkCallbackDestinations(changes, ctx.allowPrivateNetworks);

  const subscription: Subscription = {
    id: newId('sub', ctx.now),
    accountId,
    event: changes.event!,
    description: changes.description!,
    active: changes.active!,
    experiences: changes.experiences!,
    callback,
    createdAt: ctx.now,
    updatedAt: ctx.now,
    disabled: null,
    rateLimit: changes.rateLimit ?? null,
  };
  return ctx.db.transaction().execute(async (trx) => {
    await lockAccountSubscriptions(trx, accountId);
    if ((await countSubscriptions(trx, accountId)) >= LIMITS.subscriptionsPerAccount) throw conflict(`an account can have at most ${LIMITS.subscriptionsPerAccount} subscriptions; delete one first`);
    await insertSubscription(trx, subscriptionToRow(subscription, ctx.box));
    const signingSecret = await createSigningSecret(trx, ctx.box, { accountId, subscriptionId: subscription.id }, callback.url, ctx.now);
    return { subscription, signingSecret };
  });
}

/** Applies the members the body carries and keeps the others; undefined when not the account's. */
export async function updateSubscription(ctx: SubscriptionsContext, accountId: string, id: string, body: SubscriptionBody): Promise<Subscription | undefined> {
  const row = await findSubscription(ctx.db, accountId, id);
  if (!row) return undefined;
  const stored = rowToSubscription(row, ctx.box);
  const { changes, errors } = parseSubscriptionBody(body, 'update', { accountId, id });
  throwIfAny(errors);
  if (changes.callback) {
    const { authorization, url } = changes.callback;
    throwIfAny(restoreMaskedSecrets(authorization, url, stored.callback.authorization, stored.callback.url, 'body.callback.authorization'));
  }
  await checkCallbackDestinations(changes, ctx.allowPrivateNetworks);

  const updated: Subscription = {
    ...stored,
    event: changes.event ?? stored.event,
    description: changes.description ?? stored.description,
    active: changes.active ?? stored.active,
    experiences: changes.experiences ?? stored.experiences,
    callback: changes.callback ?? stored.callback,
    updatedAt: Math.max(ctx.now, stored.createdAt),
    // Turning it on again is the owner's answer to an auto-disable: the reason goes.
    disabled: changes.active === true ? null : stored.disabled,
    rateLimit: changes.rateLimit === undefined ? stored.rateLimit : changes.rateLimit,
  };
  // The body alone was checked above; an event changed to an operational one must not keep stored experiences.
  throwIfAny(validateEventExperiences(updated.event, updated.experiences));
  const reenabled = stored.disabled !== null && updated.disabled === null;
  const found = await ctx.db.transaction().execute(async (tx) => {
    // Its run of failures starts over, or the next failed attempt would switch it off again at once.
    if (reenabled) await restartFailureRun(tx, id);
    // Rate limit (rate-limit.ts): deliveries waiting for their turn under a removed or raised limit are due now.
    if (liftsRateLimit(stored.rateLimit, updated.rateLimit)) await releaseRateLimitedDeliveries(tx, id, ctx.now);
    const moved = updated.callback.url !== stored.callback.url;
    if (moved) await lockAccountSubscriptions(tx, accountId);
    const written = await updateSubscriptionRow(tx, accountId, id, {
      event: updated.event,
      description: updated.description,
      active: updated.active ? 1 : 0,
      experiences: JSON.stringify(updated.experiences),
      callback_url: updated.callback.url,
      callback_authorization_encrypted: encryptAuthorization(ctx.box, id, updated.callback.authorization),
      callback_custom_headers: JSON.stringify(updated.callback.customHeaders),
      updated_at: updated.updatedAt,
      disabled_reason: updated.disabled?.reason ?? null,
      disabled_at: updated.disabled?.at ?? null,
      rate_limit: updated.rateLimit,
    });
    // One secret per receiver URL: at a URL that has subscriptions, it takes theirs.
    if (written && moved) await moveSigningSecret(tx, ctx.box, { accountId, subscriptionId: id }, updated.callback.url, ctx.now);
    return written;
  });
  return found ? updated : undefined;
}

export async function getSubscription(db: Executor, box: SecretBox, accountId: string, id: string): Promise<Subscription | undefined> {
  const row = await findSubscription(db, accountId, id);
  return row ? rowToSubscription(row, box) : undefined;
}

export interface SubscriptionFilter {
  event?: SubscriptionEvent;
  /** Subscriptions whose `experiences` name this experience. */
  experience?: string;
  active?: boolean;
}

export async function listSubscriptions(db: Executor, box: SecretBox, accountId: string, filter: SubscriptionFilter = {}): Promise<Subscription[]> {
  const rows = await listSubscriptionRows(db, accountId, { event: filter.event, active: filter.active });
  const subscriptions = rows.map((row) => rowToSubscription(row, box));
  // Filtered here, not in SQL: JSON array membership differs between the dialects, and an
  // account holds at most 100 subscriptions.
  return filter.experience === undefined ? subscriptions : subscriptions.filter((s) => s.experiences.includes(filter.experience!));
}

export async function deleteSubscription(db: Executor, accountId: string, id: string): Promise<boolean> {
  return deleteSubscriptionRow(db, accountId, id);
}
