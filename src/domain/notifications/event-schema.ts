import { Type, type TLiteral, type TSchemaOptions, type TUnion } from 'typebox';
import type { AnyNotificationEvent } from './events.js';

/**
 * A list of events from events.ts (NOTIFICATION_EVENTS, REQUEST_EVENTS) as a JSON Schema: an
 * `anyOf` of one `const` per event, in the list's order, as TypeBox writes a union of literals
 * (what the OpenAPI document and the payload schemas publish), typed as the events.
 */
export function eventSchema<E extends AnyNotificationEvent>(events: readonly E[], options?: TSchemaOptions): TUnion<[TLiteral<E>]> {
  // TypeBox infers a union's type from a tuple of its members; given a list it infers never.
  return Type.Union(
    events.map((event) => Type.Literal(event)),
    options,
  ) as TUnion<[TLiteral<E>]>;
}
