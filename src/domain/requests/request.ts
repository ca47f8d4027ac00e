import type { CanceledItem, DeliveredItem } from './items.js';
import { iso } from '../time.js';

/** Status of a reward request; see docs/requests.md for the transitions. */
export type RequestStatus = 'received' | 'registered' | 'rejected' | 'processed' | 'failed';

/** A reward request as the domain sees it (the requests repository maps rows to it). */
export interface RewardRequest {
  id: string;
  accountId: string;
  /** Experience name as sent. */
  experience: string;
  event: string | null;
  /** `data` as sent; undefined when the body had none. */
  data: unknown;
  registeredCallbackUrl: string | null;
  processedCallbackUrl: string | null;
  status: RequestStatus;
  rewardValue: number | null;
  errorCode: string | null;
  message: string | null;
  delivered: DeliveredItem[] | null;
  canceled: CanceledItem[] | null;
  createdAt: number;
  updatedAt: number;
  registeredAt: number | null;
  concludedAt: number | null;
}

/** The body of GET /requests/{id} (schema: http/schemas/requests.ts, RequestView). */
export interface RequestViewBody {
  id: string;
  status: RequestStatus;
  experience: string;
  event?: string;
  data?: unknown;
  registeredCallbackUrl?: string;
  processedCallbackUrl?: string;
  rewardValue?: number;
  errorCode?: string;
  message?: string;
  createdAt: string;
  updatedAt: string;
  registeredAt?: string;
  concluded?: string;
  delivered?: DeliveredItem[];
  canceled?: CanceledItem[];
}

/** The body of GET /requests/{id}: members without a value are left out. */
export function toRequestView(request: RewardRequest): RequestViewBody {
  return {
    id: request.id,
    status: request.status,
    experience: request.experience,
    ...(request.event !== null ? { event: request.event } : {}),
    ...(request.data !== undefined ? { data: request.data } : {}),
    ...(request.registeredCallbackUrl ? { registeredCallbackUrl: request.registeredCallbackUrl } : {}),
    ...(request.processedCallbackUrl ? { processedCallbackUrl: request.processedCallbackUrl } : {}),
    ...(request.rewardValue !== null && request.rewardValue > 0 ? { rewardValue: request.rewardValue } : {}),
    ...(request.errorCode !== null ? { errorCode: request.errorCode } : {}),
    ...(request.message !== null ? { message: request.message } : {}),
    createdAt: iso(request.createdAt),
    updatedAt: iso(request.updatedAt),
    ...(request.registeredAt !== null ? { registeredAt: iso(request.registeredAt) } : {}),
    ...(request.concludedAt !== null ? { concluded: iso(request.concludedAt) } : {}),
    ...(request.delivered !== null ? { delivered: request.delivered } : {}),
    ...(request.canceled !== null ? { canceled: request.canceled } : {}),
  };
}
