/**
 * Notification order (docs/delivery.md, "Order"): a request's `processed-requests` waits for its
 * `registered-requests` to the same **receiver**, the callback URL's origin (scheme, host and
 * port). A receiver that takes each event at its own path (`/hooks/registered`,
 * `/hooks/processed`) keeps the order, and two receivers never wait for each other.
 */
function receiverOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return url; // Stored URLs were parsed when saved; an unparsable one only orders with itself.
  }
}

/** The key under which a request's notifications to one receiver are ordered. */
export function orderKey(requestId: string, url: string): string {
  return `${requestId}\u0000${receiverOf(url)}`;
}
