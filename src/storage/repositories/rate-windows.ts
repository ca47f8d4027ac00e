import { sql } from 'kysely';
import type { Executor } from '../database.js';
import { dialectOf } from '../dialect.js';
import { precompiled } from '../precompiled.js';

/**
 * The fixed one-second windows of rate-limited subscriptions (`subscription_rate_windows`, one row
 * per subscription), shared by every worker process: each request for a turn adds to the current
 * window's count, in one statement for the whole batch (fixed SQL text, the counts as one JSON
 * parameter, in subscription order so two workers never lock the same rows in opposite orders).
 *
 * A window only moves forward: a worker whose clock is behind counts into the newest window any
 * worker has opened instead of resetting it. A subscription deleted meanwhile gets no row (and no
 * turn) instead of breaking the batch on the foreign key.
 */
const countTurns = precompiled<[windowStart: number, counts: string], { subscription_id: string; window_start: number; granted: number }>(
  (db, windowStart, counts) =>
    sql`insert into subscription_rate_windows as w (subscription_id, window_start, granted)
          select c.subscription, cast(${windowStart} as bigint), c.turns from ${dialectOf(db).records(counts, 'c', { subscription: 'text', turns: 'int' })}
          where exists (select 1 from subscriptions s where s.id = c.subscription) order by 1
          on conflict (subscription_id) do update set
            granted = case when excluded.window_start > w.window_start then excluded.granted else w.granted + excluded.granted end,
            window_start = case when excluded.window_start > w.window_start then excluded.window_start else w.window_start end
          returning subscription_id, window_start, granted`,
);

export interface RateWindow {
  /** Start of the window the turns were counted in (epoch ms, a whole second). */
  windowStart: number;
  /** Turns the window has handed out, these included: they are the last `count` of them. */
  granted: number;
}

/**
 * Counts `count` more turns for each subscription in the window starting at `windowStart` (or a
 * newer one already open) and answers where each subscription's window stands now. Deleted
 * subscriptions are missing from the answer.
 */
export async function countRateWindowTurns(db: Executor, windowStart: number, counts: ReadonlyMap<string, number>): Promise<Map<string, RateWindow>> {
  if (counts.size === 0) return new Map();
  const ordered = [...counts].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const rows = await countTurns(db, windowStart, JSON.stringify(ordered.map(([subscription, turns]) => ({ subscription, turns }))));
  return new Map(rows.map((row) => [row.subscription_id, { windowStart: Number(row.window_start), granted: Number(row.granted) }]));
}
