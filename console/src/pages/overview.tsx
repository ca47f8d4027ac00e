import { api, call, type Stats, type Subscription } from '../api/client';
import { href, navigate, route } from '../router';
import { Badge, Loading, Problem, Select, When, useAsync } from '../ui';

const WINDOWS: [string, string][] = [
  ['1h', 'Last hour'],
  ['24h', 'Last 24 hours'],
  ['7d', 'Last 7 days'],
];
type Window = '1h' | '24h' | '7d';

/** GET /v2/subscriptions, then GET /v2/subscriptions/{id}/stats?window= for each (`?window=` in the URL, 24h by default). */
export function Overview() {
  const chosen = route.value.query.get('window');
  const window: Window = chosen === '1h' || chosen === '7d' ? chosen : '24h';
  const label = WINDOWS.find(([w]) => w === window)![1].toLowerCase();
  const subs = useAsync(() => call(api.GET('/v2/subscriptions')), []);
  return (
    <section>
      <div class="title-row">
        <h1>Overview</h1>
        <Select label="Period" value={window} onValue={(w) => navigate(href('/', { window: w === '24h' ? undefined : w }), true)} options={WINDOWS} data-testid="stats-window" />
      </div>
      <p class="lede">Each endpoint's health over the {label}: its attempts, and the notifications waiting or given up on now.</p>
      {subs.loading && !subs.data ? <Loading label="Loading subscriptions…" /> : null}
      <Problem problem={subs.error} />
      {subs.data && subs.data.length === 0 ? (
        <p>
          No subscriptions yet. <a href={href('/subscriptions/new')}>Create one</a>.
        </p>
      ) : null}
      <ul class="cards" data-testid="overview-list">
        {subs.data?.map((s) => (
          <HealthCard key={`${s._id}|${window}`} subscription={s} window={window} />
        ))}
      </ul>
    </section>
  );
}

function HealthCard({ subscription: s, window }: { subscription: Subscription; window: Window }) {
  const stats = useAsync(() => call(api.GET('/v2/subscriptions/{subscriptionId}/stats', { params: { path: { subscriptionId: s._id }, query: { window } } })), [s._id, window]);
  const disabled = Boolean(s.disabledReason);
  return (
    <li class={disabled ? 'card card-disabled' : 'card'} data-testid="health-card" data-subscription-id={s._id}>
      <h2>
        <a href={href(`/subscriptions/${encodeURIComponent(s._id)}`)}>{s.description || s.callback.url}</a>
      </h2>
      <p class="meta">
        <code>{s.event}</code> → <span class="url">{s.callback.url}</span> {s.active ? <Badge kind="ok">active</Badge> : <Badge kind="off">inactive</Badge>}
      </p>
      {disabled ? (
        <p class="disabled-reason" role="note" data-testid="disabled-reason">
          <strong>Switched off by the service</strong> <When at={s.disabledAt} />: {s.disabledReason}
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

/**
 * Each figure says what it counts: attempts in the period (a notification retried twice then
 * delivered is three attempts, one of them a success), or notifications as they stand now, each
 * linked to the list of exactly those notifications.
 */
function Health({ stats, subscriptionId }: { stats: Stats; subscriptionId: string }) {
  const { succeeded, retry, failed } = stats.attempts;
  const total = succeeded + retry + failed;
  return (
    <div class="health">
      <SeriesChart stats={stats} />
      <dl class="figures">
        <div>
          <dt>Attempts that succeeded</dt>
          <dd data-testid="success-rate">
            {total === 0 ? (
              'no attempts'
            ) : (
              <>
                {pct(stats.successRate)} <small>of {total}</small>
              </>
            )}
          </dd>
        </div>
        <div>
          <dt>p50 latency</dt>
          <dd data-testid="p50">{ms(stats.latencyMs.p50)}</dd>
        </div>
        <div>
          <dt>Attempts</dt>
          <dd>
            {succeeded} succeeded · {retry} failed, retried · {failed} failed, final
          </dd>
        </div>
        <div>
          <dt>Pending now</dt>
          <dd data-testid="pending">
            <a href={href('/deliveries', { subscriptionId, status: 'pending' })}>{stats.pending}</a>
          </dd>
        </div>
        <div>
          <dt>Failed now</dt>
          <dd data-testid="failed">
            <a href={href('/deliveries', { subscriptionId, status: 'failed' })}>{stats.failed}</a>
          </dd>
        </div>
        <div>
          <dt>Last failed attempt</dt>
          <dd data-testid="last-error">
            {stats.lastFailure ? (
              <>
                {stats.lastFailure.error ?? `HTTP ${stats.lastFailure.statusCode ?? '?'}`}{' '}
                <small>
                  <When at={stats.lastFailure.at} />
                </small>
                {stats.lastSuccess && stats.lastSuccess.at > stats.lastFailure.at ? <small class="hint"> succeeded since</small> : null}
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

/**
 * The period as a time series, built from the data as inline SVG: per bucket a bar of its attempts
 * (succeeded, to retry, failed), and the p50 latency as a line over them.
 */
function SeriesChart({ stats }: { stats: Stats }) {
  const series = stats.series;
  const width = 300;
  const barsHeight = 48;
  const lineHeight = 28;
  const step = width / Math.max(1, series.length);
  const most = Math.max(1, ...series.map((b) => b.attempts.succeeded + b.attempts.retry + b.attempts.failed));
  const slowest = Math.max(0, ...series.map((b) => b.latencyMs.p50 ?? 0));
  const total = stats.attempts.succeeded + stats.attempts.retry + stats.attempts.failed;
  const points = series
    .map((b, i) => (b.latencyMs.p50 === null || slowest === 0 ? null : `${(i + 0.5) * step},${barsHeight + 4 + lineHeight - (b.latencyMs.p50 / slowest) * lineHeight}`))
    .filter((p): p is string => p !== null);
  const label =
    total === 0
      ? `No attempts in the period (${series.length} buckets)`
      : `${stats.attempts.succeeded} succeeded, ${stats.attempts.retry} to retry, ${stats.attempts.failed} failed of ${total} attempts, in ${series.length} buckets; busiest bucket ${most} attempts; p50 latency up to ${ms(slowest || null)}`;
  return (
    <svg
      class="chart"
      viewBox={`0 0 ${width} ${barsHeight + lineHeight + 18}`}
      width={width}
      height={barsHeight + lineHeight + 18}
      role="img"
      aria-label={label}
      data-testid="health-chart"
      data-buckets={series.length}
    >
      <title>{label}</title>
      <rect class="bar-empty" x={0} y={0} width={width} height={barsHeight} />
      {series.map((b, i) => {
        let y = barsHeight;
        return (['succeeded', 'retry', 'failed'] as const).map((kind) => {
          const h = (b.attempts[kind] / most) * barsHeight;
          y -= h;
          return h > 0 ? <rect key={`${i}-${kind}`} class={`bar-${kind === 'succeeded' ? 'ok' : kind}`} x={i * step + 0.5} y={y} width={Math.max(1, step - 1)} height={h} /> : null;
        });
      })}
      {points.length > 1 ? <polyline class="line-p50" points={points.join(' ')} /> : null}
      <text class="chart-text" x={0} y={barsHeight + lineHeight + 16}>
        attempts per {bucketName(series)} · line: p50 latency (max {ms(slowest || null)})
      </text>
    </svg>
  );
}

function bucketName(series: Stats['series']): string {
  if (series.length < 2) return 'bucket';
  const minutes = (Date.parse(series[1]!.start) - Date.parse(series[0]!.start)) / 60_000;
  return minutes < 60 ? `${minutes} minutes` : minutes === 60 ? 'hour' : `${minutes / 60} hours`;
}
