import { Batcher } from '../../batcher.js';
import type { Db } from '../../storage/database.js';
import { lightTransaction } from '../../storage/light-transaction.js';
import { postpone, type Delivery } from '../../storage/deliveries.js';
import { countRateWindowTurns } from '../../storage/repositories/rate-windows.js';

/** The rate limit's window: `rateLimit` deliveries per calendar second of the worker's clock. */
const RATE_WINDOW_MS = 1000;
/** Postponed deliveries sharing a window are due over its first 100 ms, in the order of their turns. */
const SPREAD_MS = 100;

/**
 * Pure: when the delivery holding turn `position` (1-based) of the window starting at
 * `windowStart` may go. Undefined: now, it is within the limit. Otherwise the k-th turn over the
 * limit falls ceil(k / limit) windows later, spread over the start of that window in turn order.
 */
export function turnTime(windowStart: number, position: number, limit: number): number | undefined {
  if (position <= limit) return undefined;
  const over = position - limit;
  return windowStart + Math.ceil(over / limit) * RATE_WINDOW_MS + Math.floor((((over - 1) % limit) * SPREAD_MS) / limit);
}

export interface TurnRequest {
  /** The delivery, held under its written lease. */
  delivery: Delivery;
  subscriptionId: string;
  /** The subscription's rateLimit: deliveries per second. */
  limit: number;
  /** A test send takes its turn (the others wait behind it) but is never postponed: someone waits for its answer. */
  test: boolean;
}

/** `now`: send it. `postponed`: it is due again at its turn, its lease let go. `lost`: another worker holds it. */
export type Turn = 'now' | 'postponed' | 'lost';

/**
 * Per-subscription rate limit at delivery time, shared by every worker through the database (a
 * fixed one-second window per subscription, rate-windows.ts). The deliveries asking in the same
 * tick (the deliveries of one claim) are one batch (a Batcher): one statement counts their turns, and one
 * more postpones those over the limit, without using a delivery attempt or a run.
 * Only deliveries to subscriptions with a rateLimit ask: the others cost nothing.
 */
export class RateLimiter {
  readonly #batcher: Batcher<TurnRequest, Turn>;

  constructor(
    private readonly db: Db,
    private readonly clock: () => number,
  ) {
    this.#batcher = new Batcher({ gather: 'microtask', maxBatch: 1000, run: (requests) => this.#run(requests) });
  }

  /** Asks for the delivery's turn; when it is not now, it has been postponed (or lost) when this resolves. */
  turn(request: TurnRequest): Promise<Turn> {
    return this.#batcher.submit(request);
  }

  async #run(requests: TurnRequest[]): Promise<Turn[]> {
    const now = this.clock();
    const counts = new Map<string, number>();
    for (const { subscriptionId } of requests) counts.set(subscriptionId, (counts.get(subscriptionId) ?? 0) + 1);
    const windowStart = Math.floor(now / RATE_WINDOW_MS) * RATE_WINDOW_MS;
    const windows = await lightTransaction(this.db, (tx) => countRateWindowTurns(tx, windowStart, counts), { singleStatement: true });

    // This batch holds the last `count` turns of each window, in the order the deliveries asked.
    const nextPosition = new Map([...windows].map(([id, window]) => [id, window.granted - counts.get(id)! + 1]));
    const postponements: Array<{ delivery: Delivery; runAt: number; limit: number }> = [];
    const turns = requests.map((request): Turn => {
      const window = windows.get(request.subscriptionId);
      // Deleted meanwhile: the delivery goes on and finds out.
      if (!window) return 'now';
      const position = nextPosition.get(request.subscriptionId)!;
      nextPosition.set(request.subscriptionId, position + 1);
      const runAt = turnTime(window.windowStart, position, request.limit);
      if (runAt === undefined || request.test) return 'now';
      postponements.push({ delivery: request.delivery, runAt, limit: request.limit });
      return 'postponed';
    });
    if (postponements.length === 0) return turns;

    const held = await lightTransaction(this.db, (tx) => postpone(tx, postponements, now), { singleStatement: true });
    return turns.map((turn, i) => (turn === 'postponed' && !held.has(requests[i]!.delivery.id) ? 'lost' : turn));
  }
}
