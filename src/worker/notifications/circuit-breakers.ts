import { Batcher } from '../../batcher.js';
import { RELEASE_WINDOW, type CircuitSettings } from '../../domain/notifications/circuit-breaker.js';
import type { Logger } from '../../logger.js';
import type { CircuitChangeFact } from '../../services/circuit-breakers.js';
import type { Db } from '../../storage/database.js';
import { DELIVERIES, hold, releaseHeld, type Delivery } from '../../storage/deliveries.js';
import { notifyOtherProcesses } from '../../storage/queue/index.js';
import { countDue, endpointKey, findCircuits, listCircuitsToTend, listOpenCircuits, saveCircuit, type Endpoint, type StoredCircuit } from '../../storage/repositories/endpoint-circuits.js';

/** How old the process's view of the open circuits may be: a circuit another worker opened is seen within this. */
const OPEN_CIRCUITS_REFRESH_MS = 1_000;

export interface AdmitRequest extends Endpoint {
  /** The delivery, held under its written lease. */
  delivery: Delivery;
  /** Sent whatever the circuit: a test send or a manual retry, which someone asked for now (and which tests the endpoint). */
  bypass: boolean;
}

/** `send`: make the attempt. `held`: the circuit is open, the delivery is held (no attempt, its lease let go). `lost`: another worker holds it. */
export type Admission = 'send' | 'held' | 'lost';

/**
 * The worker's side of the endpoint circuit breakers (docs/delivery.md, "Circuit breaker"); the
 * attempt log writer records the attempts that open and close them (services/circuit-breakers.ts).
 *
 * - **Admit.** Before its call, each delivery asks (a Batcher: one claim's deliveries ask
 *   together). The process knows which circuits are open (read whole at most once per
 *   OPEN_CIRCUITS_REFRESH_MS, and told at once of the changes its own attempts made), so a
 *   delivery to an endpoint with no open circuit costs nothing. One to an open endpoint is held,
 *   unless it is the circuit's probe: in one transaction the circuits are read again, locked (a
 *   close waits for the hold, then releases it with the rest), and the deliveries still leased
 *   are held (storage/deliveries.ts `hold`). A hold costs no outbound slot and no attempt.
 * - **Upkeep**, run by the delivery loop every 250 ms (delivery-loop.ts): an open
 *   circuit whose probe is due and has none in flight takes its oldest held notification as the
 *   probe (made due now, named on the circuit until `probeTimeoutMs`); a closed circuit that still
 *   holds notifications releases them oldest first, a window of RELEASE_WINDOW at a time, the next
 *   one once half of the last is out: its backlog never sits in front of the account's other
 *   endpoints longer than one window (the claim's account bound and the outbound limiter share
 *   the rest fairly). Each circuit is tended by one process at a time (its row locked).
 */
export class CircuitBreakers {
  readonly #batcher: Batcher<AdmitRequest, Admission>;
  #open: { at: number; circuits: Map<string, StoredCircuit> } | undefined;

  constructor(
    private readonly db: Db,
    private readonly options: { clock: () => number; settings: CircuitSettings; probeTimeoutMs: number; log: Logger },
  ) {
    this.#batcher = new Batcher({ gather: 'microtask', maxBatch: 1000, run: (requests) => this.#admit(requests) });
  }

  admit(request: AdmitRequest): Promise<Admission> {
    return this.#batcher.submit(request);
  }

  /** A change this process's attempts made, known before the next refresh. */
  changed(change: CircuitChangeFact): void {
    if (!this.#open) return;
    const key = endpointKey(change);
    if (change.state === 'closed') this.#open.circuits.delete(key);
    else this.#open = undefined;
  }

  async #openCircuits(): Promise<Map<string, StoredCircuit>> {
    const at = performance.now();
    if (!this.#open || at - this.#open.at >= OPEN_CIRCUITS_REFRESH_MS) {
      const circuits = await listOpenCircuits(this.db);
      this.#open = { at, circuits: new Map(circuits.map((circuit) => [endpointKey(circuit), circuit])) };
    }
    return this.#open.circuits;
  }

  async #admit(requests: AdmitRequest[]): Promise<Admission[]> {
    if (this.options.settings.failures === 0) return requests.map(() => 'send');
    const open = await this.#openCircuits();
    const candidates = requests.filter((request) => !request.bypass && open.has(endpointKey(request)));
    if (candidates.length === 0) return requests.map(() => 'send');
    const now = this.options.clock();
    const { circuits, toHold, held } = await this.db.transaction().execute(async (tx) => {
      const circuits = await findCircuits(tx, candidates, { lock: true, state: 'open' });
      const toHold = candidates.filter((request) => {
        const circuit = circuits.get(endpointKey(request));
        return circuit !== undefined && circuit.probeId !== request.delivery.id;
      });
      return {
        circuits,
        toHold,
        held: await hold(
          tx,
          toHold.map((request) => request.delivery),
          now,
        ),
      };
    });
    for (const request of candidates) if (!circuits.has(endpointKey(request))) open.delete(endpointKey(request));
    const holding = new Set(toHold);
    return requests.map((request) => (!holding.has(request) ? 'send' : held.has(request.delivery.id) ? 'held' : 'lost'));
  }

  /** Probes and releases that are due (the delivery loop calls it every 250 ms); answers how many notifications it made due. */
  async upkeep(): Promise<number> {
    const now = this.options.clock();
    let released = 0;
    for (const circuit of await listCircuitsToTend(this.db, now)) {
      released += circuit.state === 'open' ? await this.#probe(circuit, now) : await this.#drain(circuit, now);
    }
    return released;
  }

  /** The open circuit's next probe: its oldest held notification, due now and named on the circuit. */
  #probe(endpoint: Endpoint, now: number): Promise<number> {
    return this.db.transaction().execute(async (tx) => {
      const circuit = (await findCircuits(tx, [endpoint], { lock: true, state: 'open' })).get(endpointKey(endpoint));
      if (!circuit || circuit.nextProbeAt === null || circuit.nextProbeAt > now || (circuit.probeUntil !== null && circuit.probeUntil > now)) return 0;
      const [probe] = await releaseHeld(tx, endpoint, 1, now);
      if (!probe) return 0;
      await saveCircuit(tx, endpoint, { ...circuit, probeId: probe, probeUntil: now + this.options.probeTimeoutMs }, now);
      await notifyOtherProcesses(tx, [DELIVERIES]);
      this.options.log.info({ accountId: endpoint.accountId, url: endpoint.url, notificationId: probe, probes: circuit.probes }, 'circuit breaker: probing the endpoint');
      return 1;
    });
  }

  /** The closed circuit's next window of held notifications; once none is left, the circuit is gone (or failing again). */
  #drain(endpoint: Endpoint, now: number): Promise<number> {
    return this.db.transaction().execute(async (tx) => {
      const circuit = (await findCircuits(tx, [endpoint], { lock: true, state: 'draining' })).get(endpointKey(endpoint));
      if (!circuit) return 0;
      const room = RELEASE_WINDOW - (await countDue(tx, endpoint, now, RELEASE_WINDOW));
      if (room < RELEASE_WINDOW / 2) return 0;
      const released = await releaseHeld(tx, endpoint, room, now);
      if (released.length < room) await saveCircuit(tx, endpoint, circuit.failures === 0 ? undefined : { ...circuit, state: 'failing' }, now);
      if (released.length > 0) await notifyOtherProcesses(tx, [DELIVERIES]);
      return released.length;
    });
  }
}
