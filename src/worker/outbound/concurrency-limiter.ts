/**
 * Bounds callback calls in flight: overall (sockets, memory) and per host (one client's slow or
 * hanging server must not take every slot). A waiter blocked only by its own host's limit is
 * skipped, so calls to other hosts start at once: a slow receiver never delays the others.
 */

export interface ConcurrencyLimits {
  overall: number;
  perHost: number;
}

export const DEFAULT_CONCURRENCY_LIMITS: ConcurrencyLimits = { overall: 64, perHost: 8 };

interface Waiter {
  /** Arrival order, for FIFO across hosts. */
  seq: number;
  start: () => void;
}

export interface ConcurrencyLimiter {
  /** Runs `task` once a slot for `host` is free; the slot is released when it settles. */
  run<T>(host: string, task: () => Promise<T>): Promise<T>;
  /** Tasks running and waiting, for metrics and tests. */
  stats(): { active: number; waiting: number; activeByHost: Record<string, number> };
}

export function createConcurrencyLimiter(limits: ConcurrencyLimits = DEFAULT_CONCURRENCY_LIMITS): ConcurrencyLimiter {
  if (!(limits.overall >= 1 && limits.perHost >= 1)) throw new RangeError('concurrency limits must be at least 1');
  let active = 0;
  const activeByHost = new Map<string, number>();
  /** FIFO queues of the hosts that have waiters. One queue per host keeps a release O(hosts), not O(waiters). */
  const queues = new Map<string, Waiter[]>();
  let waitingCount = 0;
  let arrivals = 0;

  const canStart = (host: string) => active < limits.overall && (activeByHost.get(host) ?? 0) < limits.perHost;

  const acquire = (host: string) => {
    active++;
    activeByHost.set(host, (activeByHost.get(host) ?? 0) + 1);
  };

  /** The host under its own limit whose first waiter arrived earliest. */
  const nextHost = (): string | undefined => {
    let best: string | undefined;
    let bestSeq = Infinity;
    for (const [host, queue] of queues) {
      if (queue[0]!.seq < bestSeq && (activeByHost.get(host) ?? 0) < limits.perHost) {
        best = host;
        bestSeq = queue[0]!.seq;
      }
    }
    return best;
  };

  const release = (host: string) => {
    active--;
    const left = (activeByHost.get(host) ?? 1) - 1;
    if (left === 0) activeByHost.delete(host);
    else activeByHost.set(host, left);
    // FIFO among the waiters that can run; skipping past a host at its limit is what keeps one
    // slow host from blocking the queue for everyone else.
    while (active < limits.overall) {
      const next = nextHost();
      if (next === undefined) break;
      const queue = queues.get(next)!;
      const waiter = queue.shift()!;
      if (queue.length === 0) queues.delete(next);
      waitingCount--;
      acquire(next);
      waiter.start();
    }
  };

  return {
    run<T>(host: string, task: () => Promise<T>): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        const start = () => {
          Promise.resolve()
            .then(task)
            .then(resolve, reject)
            .finally(() => release(host));
        };
        if (canStart(host)) {
          acquire(host);
          start();
        } else {
          const queue = queues.get(host);
          const waiter = { seq: arrivals++, start };
          if (queue) queue.push(waiter);
          else queues.set(host, [waiter]);
          waitingCount++;
        }
      });
    },
    stats() {
      return { active, waiting: waitingCount, activeByHost: Object.fromEntries(activeByHost) };
    },
  };
}
