/**
 * The endpoint circuit breaker's rules (docs/delivery.md, "Circuit breaker"). Pure: the storage
 * keeps a circuit per endpoint (an account's callback URL, as signing secrets are keyed) and the
 * worker applies these to each batch of attempts and to each probe.
 *
 * - An attempt that got no answer (refused, reset, timed out, TLS failed) or a 5xx counts as the
 *   endpoint being down. Any other answer (2xx, 3xx, 4xx) shows it up: it resets the count.
 * - After `failures` such attempts in a row the circuit opens: new notifications for the endpoint
 *   are held, no attempt made. One probe at a time tests it: the first `probeIntervalMs` after the
 *   opening, then doubling after each failed probe up to `probeMaxIntervalMs`.
 * - The first attempt that gets an answer closes it; what it held is released, oldest first.
 */

export interface CircuitSettings {
  /** Attempts in a row without an answer or with a 5xx that open the circuit; 0 = no breaker (CIRCUIT_BREAKER_FAILURES). */
  failures: number;
  /** The wait between the opening and the first probe (CIRCUIT_BREAKER_PROBE_INTERVAL). */
  probeIntervalMs: number;
  /** The longest wait between two probes (CIRCUIT_BREAKER_PROBE_MAX_INTERVAL). */
  probeMaxIntervalMs: number;
}

export const DEFAULT_CIRCUIT_SETTINGS: CircuitSettings = { failures: 5, probeIntervalMs: 10_000, probeMaxIntervalMs: 60_000 };

/** Held notifications of a closed circuit released at once, at most: the next ones when those are out (storage/deliveries.ts `releaseHeld`). */
export const RELEASE_WINDOW = 200;

type CircuitState = 'failing' | 'open' | 'draining';

/** An endpoint's circuit as stored (no row: closed and healthy). */
export interface Circuit {
  state: CircuitState;
  failures: number;
  reason: string | null;
  openedAt: number | null;
  closedAt: number | null;
  nextProbeAt: number | null;
  probeIntervalMs: number | null;
  probeId: string | null;
  probeUntil: number | null;
  probes: number;
}

/** One attempt to the endpoint, in the order they started. */
export interface CircuitObservation {
  notificationId: string;
  statusCode: number | null;
  error: string | null;
}

/** Whether an attempt says the endpoint is down: no answer at all, or a 5xx. */
export const saysDown = (statusCode: number | null): boolean => statusCode === null || statusCode >= 500;

/** The delivery log's words for a failure the breaker counted. */
function failureText(observation: Pick<CircuitObservation, 'statusCode' | 'error'>): string {
  if (observation.statusCode !== null) return `HTTP ${observation.statusCode}`;
  return observation.error ?? 'no answer';
}

/** The wait after a failed probe: doubled, at most the longest. */
export const nextProbeInterval = (current: number | null, settings: CircuitSettings): number => (current === null ? settings.probeIntervalMs : Math.min(current * 2, settings.probeMaxIntervalMs));

export type CircuitChange = 'opened' | 'closed' | null;

/**
 * A circuit after a batch of attempts to its endpoint (in the order they started): undefined when
 * the endpoint is healthy (no row), and whether the batch opened or closed it. A circuit that is
 * open stays open through failures that are not its probe (attempts made before a worker knew it
 * was open); its failed probe moves the next probe on.
 */
export function afterAttempts(
  current: Circuit | undefined,
  observations: readonly CircuitObservation[],
  settings: CircuitSettings,
  now: number,
): { circuit: Circuit | undefined; change: CircuitChange } {
  let lastAnswer = -1;
  observations.forEach((observation, i) => {
    if (!saysDown(observation.statusCode)) lastAnswer = i;
  });
  const trailing = observations.slice(lastAnswer + 1);
  const lastFailure = trailing.at(-1);
  const reason = lastFailure ? failureText(lastFailure) : (current?.reason ?? null);
  let circuit: Circuit | undefined = current;
  let change: CircuitChange = null;
  if (lastAnswer >= 0) {
    // Up: an open circuit closes (what it held drains), a failing one starts counting again.
    if (circuit?.state === 'open') {
      circuit = { ...circuit, state: 'draining', closedAt: now, nextProbeAt: null, probeIntervalMs: null, probeId: null, probeUntil: null };
      change = 'closed';
    }
    if (circuit) circuit = { ...circuit, failures: 0 };
  }
  if (trailing.length > 0) {
    circuit = circuit
      ? { ...circuit, failures: circuit.failures + trailing.length, reason }
      : { state: 'failing', failures: trailing.length, reason, openedAt: null, closedAt: null, nextProbeAt: null, probeIntervalMs: null, probeId: null, probeUntil: null, probes: 0 };
    if (circuit.state === 'open') {
      if (circuit.probeId !== null && trailing.some((observation) => observation.notificationId === circuit!.probeId)) {
        const interval = nextProbeInterval(circuit.probeIntervalMs, settings);
        circuit = { ...circuit, probeId: null, probeUntil: null, probeIntervalMs: interval, nextProbeAt: now + interval, probes: circuit.probes + 1 };
      }
    } else if (settings.failures > 0 && circuit.failures >= settings.failures) {
      circuit = {
        ...circuit,
        state: 'open',
        openedAt: now,
        closedAt: null,
        nextProbeAt: now + settings.probeIntervalMs,
        probeIntervalMs: settings.probeIntervalMs,
        probeId: null,
        probeUntil: null,
        probes: 0,
      };
      change = 'opened';
    }
  }
  // Healthy again with nothing left to release: no row.
  if (circuit?.state === 'failing' && circuit.failures === 0) circuit = undefined;
  return { circuit, change };
}

/** Why a notification is held, as the delivery log says it (the circuit itself: GET /subscriptions/{id}/stats, `circuit`). */
export const HELD_REASON = "the endpoint's circuit breaker is open: the notification is sent, without using an attempt, once a probe gets an answer";
