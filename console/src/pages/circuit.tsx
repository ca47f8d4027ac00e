import type { Stats } from '../api/client';
import { When } from '../ui';

const count = new Intl.NumberFormat('en');
const failuresInARow = (n: number) => `${count.format(n)} failure${n === 1 ? '' : 's'} in a row`;

/**
 * The circuit breaker of a subscription's callback URL (`circuit` of GET …/stats; docs/delivery.md,
 * "Circuit breaker"): said plainly when it is open or sending what it held, a muted line when it
 * is closed but the URL's last attempts failed, nothing when all is well. `note`: one more
 * sentence for the open state (the subscription's page says what a test send does).
 */
export function CircuitState({ circuit, note }: { circuit: Stats['circuit']; note?: string }) {
  const held = <span data-testid="circuit-held-count">{circuit.held > 0 ? `${count.format(circuit.held)} held` : 'nothing held yet'}</span>;
  if (circuit.state === 'open') {
    const probeDue = circuit.nextProbeAt !== null && Date.parse(circuit.nextProbeAt) <= Date.now();
    return (
      <div class="notice circuit" data-testid="circuit" data-state="open">
        <p>
          <strong>Circuit open</strong> since <When at={circuit.openedAt} /> — {failuresInARow(circuit.failures)}
          {circuit.lastFailure ? `, last: ${circuit.lastFailure}` : ''} —{' '}
          <span data-testid="circuit-next-probe">
            {probeDue ? (
              'a probe is due now'
            ) : (
              <>
                next probe <When at={circuit.nextProbeAt} />
              </>
            )}
            {circuit.probes > 0 ? ` (${count.format(circuit.probes)} probe${circuit.probes === 1 ? '' : 's'} failed so far)` : ''}
          </span>{' '}
          — {held}
        </p>
        <p class="circuit-note">New notifications to this URL wait, using no attempt, until a probe gets an answer; then they go out, oldest first.{note ? ` ${note}` : ''}</p>
      </div>
    );
  }
  if (circuit.state === 'draining')
    return (
      <p class="circuit circuit-draining" data-testid="circuit" data-state="draining">
        <strong>Circuit closed again</strong> — sending what was held (<span data-testid="circuit-held-count">{count.format(circuit.held)} left</span>), oldest first.
      </p>
    );
  if (circuit.failures === 0 && circuit.held === 0) return null;
  return (
    <p class="hint circuit" data-testid="circuit" data-state="closed">
      Circuit closed{circuit.failures > 0 ? ` · ${failuresInARow(circuit.failures)}${circuit.lastFailure ? `, last: ${circuit.lastFailure}` : ''}` : ''}
      {circuit.held > 0 ? ` · ${count.format(circuit.held)} held` : ''}
    </p>
  );
}
