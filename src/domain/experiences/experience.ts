/** What a prize is: a coupon code, a payment or a parcel (each kind delivers differently). */
export type PrizeKind = 'coupon' | 'payment' | 'physical';

/** One prize of an experience (the experiences repository maps the `prizes` rows to it). */
export interface Prize {
  /** Reported as `rewardId`; unique within its experience. */
  id: string;
  bucket: string;
  title: string;
  description: string;
  value: number;
  quantity: number;
  kind: PrizeKind;
  /** Requests that can still receive this prize; null = unlimited. One request takes one unit. */
  stock: number | null;
}

/** An experience with its prizes in order, as requests name it (`experience` = `name`). */
export interface Experience {
  id: string;
  accountId: string;
  name: string;
  title: string;
  active: boolean;
  events: string[];
  prizes: Prize[];
  createdAt: number;
  updatedAt: number;
}
