import { afterAttempts, type CircuitObservation, type CircuitSettings } from '../domain/notifications/circuit-breaker.js';
import type { Executor } from '../storage/database.js';
import { countHeld, endpointKey, findCircuits, saveCircuit, type Endpoint, type StoredCircuit } from '../storage/repositories/endpoint-circuits.js';

/** One attempt that called an endpoint (a refusal, which made no call, is none): test sends and manual retries count, as they test it too. */
export interface CircuitAttempt extends CircuitObservation, Endpoint {
  startedAt: number;
}

/** A circuit that opened or closed: what the `endpoint-circuits` notification and the log tell. */
export interface CircuitChangeFact extends Endpoint {
  state: 'open' | 'closed';
  at: number;
  failures: number;
  lastFailure: string | null;
  nextProbeAt: number | null;
  /** Closed: the notifications it held, released from now on. */
  held: number;
}

/**
 * In the attempt log's transaction: each endpoint's circuit after the batch's attempts to it
 * (domain/notifications/circuit-breaker.ts), written when it changed. One statement reads (and, on
 * PostgreSQL, locks) the circuits of the batch's endpoints; an endpoint that answered and has no
 * circuit costs nothing more. Answers the circuits that opened or closed, for the caller to write
 * their `endpoint-circuits` notifications in the same transaction.
 */
export async function recordCircuitAttempts(tx: Executor, attempts: readonly CircuitAttempt[], settings: CircuitSettings, now: number): Promise<CircuitChangeFact[]> {
  if (attempts.length === 0) return [];
  const byEndpoint = new Map<string, CircuitAttempt[]>();
  for (const attempt of [...attempts].sort((a, b) => a.startedAt - b.startedAt)) {
    const key = endpointKey(attempt);
    const ofEndpoint = byEndpoint.get(key);
    if (ofEndpoint) ofEndpoint.push(attempt);
    else byEndpoint.set(key, [attempt]);
  }
  const stored = await findCircuits(
    tx,
    [...byEndpoint.values()].map(([first]) => first!),
    { lock: true },
  );
  const changes: CircuitChangeFact[] = [];
  for (const [key, observations] of byEndpoint) {
    const endpoint: Endpoint = observations[0]!;
    const current = stored.get(key);
    // Off: no new circuit; those already there still close on an answer and drain.
    if (!current && settings.failures === 0) continue;
    const { circuit, change } = afterAttempts(current, observations, settings, now);
    if (!current && !circuit) continue;
    if (current && circuit && sameCircuit(current, circuit)) continue;
    await saveCircuit(tx, endpoint, circuit, now);
    if (change === 'opened') {
      changes.push({ ...endpoint, state: 'open', at: now, failures: circuit!.failures, lastFailure: circuit!.reason, nextProbeAt: circuit!.nextProbeAt, held: 0 });
    } else if (change === 'closed') {
      changes.push({ ...endpoint, state: 'closed', at: now, failures: 0, lastFailure: circuit!.reason, nextProbeAt: null, held: await countHeld(tx, endpoint) });
    }
  }
  return changes;
}

const sameCircuit = (a: StoredCircuit, b: NonNullable<ReturnType<typeof afterAttempts>['circuit']>) =>
  a.state === b.state &&
  a.failures === b.failures &&
  a.reason === b.reason &&
  a.openedAt === b.openedAt &&
  a.closedAt === b.closedAt &&
  a.nextProbeAt === b.nextProbeAt &&
  a.probeIntervalMs === b.probeIntervalMs &&
  a.probeId === b.probeId &&
  a.probeUntil === b.probeUntil &&
  a.probes === b.probes;
