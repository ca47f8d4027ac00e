import { api, call, type Stats, type Subscription } from '../api/client';
import { href } from '../router';
import { Badge, Loading, Problem, time, useAsync } from '../ui';

/** GET /v2/subscriptions, then GET /v2/subscriptions/{id}/stats?window=24h for each. */
export function Overview() {
  const subs = useAsync(() => call(api.GET('/v2/subscriptions')), []);
  return (
    <section>
      <h1>Overview</h1>
      <p class="lede">Each endpoint's health over the last 24 hours.</p>
      {subs.loading && !subs.data ? <Loading label="Loading subscriptions…" /> : null}
      <Problem problem={subs.error} />
      {subs.data && subs.data.length === 0 ? (
        <p>
          No subscriptions yet. <a href={href('/subscriptions/new')}>Create one</a>.
        </p>
      ) : null}
      <ul class="cards" data-testid="overview-list">
        {subs.data?.map((s) => <HealthCard key={s._id} subscription={s} />)}
      </ul>
    </section>
  );
}

function HealthCard({ subscription: s }: { subscription: Subscription }) {
  const stats = useAsync(() => call(api.GET('/v2/subscriptions/{subscriptionId}/stats', { params: { path: { subscriptionId: s._id }, query: { window: '24h' } } })), [s._id]);
  const disabled = Boolean(s.disabledReason);
  return (
    <li class={disabled ? 'card card-disabled' : 'card'} data-testid="health-card" data-subscription-id={s._id}>
      <h2>
        <a href={href(`/subscriptions/${encodeURIComponent(s._id)}`)}>{s.description || s.callback.url}</a>
      </h2>
      <p class="meta">
        <code>{s.event}</code> → <span class="url">{s.callback.url}</span>{' '}
        {s.active ? <Badge kind="ok">active</Badge> : <Badge kind="off">inactive</Badge>}
      </p>
      {disabled ? (
        <p class="disabled-reason" role="note" data-testid="disabled-reason">
          <strong>Switched off by the service</strong> {time(s.disabledAt)}: {s.disabledReason}
        </p>
      ) : null}
      {stats.loading && !stats.data ? <Loading label="Loading health…" /> : null}
      <Problem problem={stats.error} />
      {stats.data ? <Health stats={stats.data} subscriptionId={s._id} /> : null}
    </li>
  );
}

function pct(rate: number | null): string {
  return rate === null ? '—' : `${(rate * 100).toFixed(rate === 1 ? 0 : 1)} %`;
}

function ms(value: number | null): string {
  return value === null ? '—' : `${value < 10 ? value.toFixed(1) : Math.round(value)} ms`;
}

function Health({ stats, subscriptionId }: { stats: Stats; subscriptionId: string }) {
  const { succeeded, retry, failed } = stats.attempts;
  return (
    <div class="health">
      <AttemptsChart stats={stats} />
      <dl class="figures">
        <div>
          <dt>Success rate</dt>
          <dd data-testid="success-rate">{pct(stats.successRate)}</dd>
        </div>
        <div>
          <dt>p50 latency</dt>
          <dd data-testid="p50">{ms(stats.latencyMs.p50)}</dd>
        </div>
        <div>
          <dt>Attempts</dt>
          <dd>
            {succeeded} ok · {retry} retried · {failed} failed
          </dd>
        </div>
        <div>
          <dt>Pending</dt>
          <dd data-testid="pending">
            <a href={href('/deliveries', { subscriptionId, status: 'pending' })}>{stats.pending}</a>
          </dd>
        </div>
        <div>
          <dt>Failed</dt>
          <dd data-testid="failed">
            <a href={href('/deliveries', { subscriptionId, status: 'failed' })}>{failed}</a>
          </dd>
        </div>
        <div>
          <dt>Last error</dt>
          <dd data-testid="last-error">
            {stats.lastFailure ? (
              <>
                {stats.lastFailure.error ?? `HTTP ${stats.lastFailure.statusCode ?? '?'}`} <small>({time(stats.lastFailure.at)})</small>
              </>
            ) : (
              'none'
            )}
          </dd>
        </div>
      </dl>
    </div>
  );
}

/** An inline SVG built from the data: the window's attempts as one stacked bar, plus p50/p95. */
function AttemptsChart({ stats }: { stats: Stats }) {
  const { succeeded, retry, failed } = stats.attempts;
  const total = succeeded + retry + failed;
  const width = 240;
  const parts: [string, number][] = [
    ['ok', succeeded],
    ['retry', retry],
    ['failed', failed],
  ];
  let x = 0;
  const p95 = stats.latencyMs.p95 ?? 0;
  const p50 = stats.latencyMs.p50 ?? 0;
  const scale = (v: number) => (p95 > 0 ? Math.max(2, (v / p95) * width) : 0);
  const label = total === 0 ? 'No attempts in 24 hours' : `${succeeded} succeeded, ${retry} retried, ${failed} failed of ${total} attempts in 24 hours`;
  return (
    <svg class="chart" viewBox={`0 0 ${width} 44`} width={width} height={44} role="img" aria-label={label} data-testid="health-chart">
      <title>{label}</title>
      <rect class="bar-empty" x={0} y={0} width={width} height={16} rx={3} />
      {total > 0
        ? parts.map(([kind, n]) => {
            const w = (n / total) * width;
            const rect = <rect key={kind} class={`bar-${kind}`} x={x} y={0} width={w} height={16} />;
            x += w;
            return rect;
          })
        : null}
      {p95 > 0 ? (
        <>
          <rect class="bar-p95" x={0} y={24} width={scale(p95)} height={8} />
          <rect class="bar-p50" x={0} y={24} width={scale(p50)} height={8} />
          <text class="chart-text" x={0} y={43}>
            latency p50 {ms(stats.latencyMs.p50)} · p95 {ms(stats.latencyMs.p95)}
          </text>
        </>
      ) : null}
    </svg>
  );
}
