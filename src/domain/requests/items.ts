import type { Prize } from '../experiences/experience.js';
import { CANCEL_REASONS } from './error-codes.js';
import { rewardValueOf, type ExperienceSnapshot } from './registration.js';
import { iso } from '../time.js';

export type { CanceledItem, DeliveredItem } from '../notifications/payload-schemas.js';
import type { CanceledItem, DeliveredItem } from '../notifications/payload-schemas.js';

/** What taking stock gave for one prize; `account-inactive`: none was taken, the account was deactivated. */
export type Allocation = 'taken' | 'out-of-stock' | 'unavailable' | 'account-inactive';

export interface ProcessingInput {
  requestId: string;
  event: string | null;
  experience: ExperienceSnapshot;
  /** One per prize of the snapshot, same order. */
  allocations: Allocation[];
  concludedAt: number;
  /** Generates the coupon code / payment id of a delivered digital prize (random in production). */
  codes: { coupon(prize: Prize): string; paymentId(prize: Prize): string };
}

export interface ProcessingResult {
  delivered: DeliveredItem[];
  canceled: CanceledItem[];
  /** Over delivered items only; undefined when zero. */
  rewardValue: number | undefined;
  /** Digital prizes delivered now: each becomes a `pedido-entregue` event with this refId. */
  digitalDeliveries: Array<{ refId: string; prize: Prize }>;
}

const CANCEL_REASON_OF = { 'out-of-stock': 'OUT_OF_STOCK', unavailable: 'PRIZE_UNAVAILABLE', 'account-inactive': 'ACCOUNT_INACTIVE' } as const;

/** Builds the processed request's items from the stock allocations. Pure. */
export function buildProcessingResult(input: ProcessingInput): ProcessingResult {
  const { experience } = input;
  const timestamp = iso(input.concludedAt);
  const result: ProcessingResult = { delivered: [], canceled: [], rewardValue: undefined, digitalDeliveries: [] };
  const deliveredPrizes: Prize[] = [];
  experience.prizes.forEach((prize, index) => {
    const allocation = input.allocations[index] ?? 'unavailable';
    if (allocation === 'taken') {
      const coupon = prize.kind === 'coupon' ? input.codes.coupon(prize) : '';
      const paymentId = prize.kind === 'payment' ? input.codes.paymentId(prize) : '';
      deliveredPrizes.push(prize);
      if (prize.kind !== 'physical') result.digitalDeliveries.push({ refId: coupon || paymentId, prize });
      result.delivered.push({
        value: prize.value,
        quantity: prize.quantity,
        name: experience.name,
        title: experience.title,
        deliveryDetail: {
          timestamp,
          info: {
            name: 'delivered',
            bucket: prize.bucket,
            coupon,
            paymentId,
            requestId: input.requestId,
            triggerId: input.event ?? '',
            rewardId: prize.id,
            description: prize.description,
          },
          // Physical prizes are handed to a delivery partner, which reports back with events.
          forwarded: prize.kind === 'physical',
        },
      });
      return;
    }
    const { reason, reasonCode } = CANCEL_REASONS[CANCEL_REASON_OF[allocation]];
    result.canceled.push({
      value: prize.value,
      quantity: prize.quantity,
      priceless: prize.value === 0,
      name: experience.name,
      title: experience.title,
      deliveryDetail: {
        timestamp,
        info: { name: 'canceled', reason, reasonCode, description: prize.description, paymentId: '' },
        forwarded: false,
      },
    });
  });
  result.rewardValue = rewardValueOf(deliveredPrizes);
  return result;
}
