import type { Generated } from 'kysely';
import type { RequestStatus } from '../../domain/requests/request.js';

export interface RequestsTable {
  id: string;
  account_id: string;
  /** The experience name as sent in POST /requests. */
  experience: string;
  event: string | null;
  /** JSON text of `data` exactly as sent (any JSON value; registration checks it is an object). */
  data: string | null;
  registered_callback_url: string | null;
  processed_callback_url: string | null;
  status: RequestStatus;
  reward_value: number | null;
  error_code: string | null;
  message: string | null;
  /** JSON of the experience and its prizes as registration saw them: processing builds items from it. */
  experience_snapshot: string | null;
  /** JSON arrays of the seed's delivered / canceled items, set by processing. */
  delivered: string | null;
  canceled: string | null;
  created_at: number;
  updated_at: number;
  registered_at: number | null;
  concluded_at: number | null;
}

export interface RequestEventsTable {
  /** Global recording order: events are listed by it, oldest first. */
  seq: Generated<number>;
  request_id: string;
  name: string;
  title: string;
  ref_id: string;
  /** Experience name. */
  experience: string;
  data: string | null;
  created_at: number;
}

export interface IdempotencyKeysTable {
  account_id: string;
  key: string;
  /** SHA-256 of the canonical JSON of the first body sent with this key. */
  body_hash: string;
  response_status: number;
  response_body: string;
  response_location: string | null;
  created_at: number;
  /** After this instant the key may be reused for a new request. */
  expires_at: number;
}

/**
 * The durable job queue of the transactional work (request registration and processing; a
 * delivery is its notification row, storage/deliveries.ts). A claimed job keeps state 'pending'
 * with `locked_by` set and `run_at` moved to the end of its lease, so an expired lease makes it
 * due again without any sweeper.
 */
export interface JobsTable {
  id: string;
  kind: string;
  payload: string;
  /** 'pending' (waiting or leased) or 'failed' (attempts exhausted; kept for inspection). */
  state: 'pending' | 'failed';
  run_at: number;
  attempts: number;
  max_attempts: number;
  locked_by: string | null;
  locked_at: number | null;
  last_error: string | null;
  created_at: number;
  updated_at: number;
}
