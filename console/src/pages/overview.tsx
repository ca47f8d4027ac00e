import { api, call, type Stats, type Subscription } from '../api/client';
import { href, navigate, route } from '../router';
import { Badge, Loading, Problem, Select, When, useAsync } from '../ui';
import { CircuitState } from './circuit';

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
      {stats.data ? <CircuitState circuit={stats.data.circuit} /> : null}
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

/** A bucket's start on the time axis, in UTC: the hour and minute, or the day for the 7-day period. */
function tick(start: string, days: boolean): string {
  const iso = new Date(start).toISOString();
  return days ? iso.slice(5, 10) : iso.slice(11, 16);
}

/**
 * The period as a time series, built from the data as inline SVG with labelled axes: per bucket a
 * bar of its attempts (succeeded, retried, failed) over an attempts axis, and below it the p50
 * latency as a line with a dot per bucket over a milliseconds axis; the time axis (UTC) under both.
 */
function SeriesChart({ stats }: { stats: Stats }) {
  const series = stats.series;
  const left = 36;
  const width = 320;
  const plot = width - left - 4;
  const barsTop = 12;
  const barsHeight = 56;
  const lineTop = barsTop + barsHeight + 14;
  const lineHeight = 30;
  const axisY = lineTop + lineHeight;
  const height = axisY + 16;
  const step = plot / Math.max(1, series.length);
  const most = Math.max(1, ...series.map((b) => b.attempts.succeeded + b.attempts.retry + b.attempts.failed));
  const slowest = Math.max(0, ...series.map((b) => b.latencyMs.p50 ?? 0));
  const total = stats.attempts.succeeded + stats.attempts.retry + stats.attempts.failed;
  const x = (i: number) => left + (i + 0.5) * step;
  const points = series.flatMap((b, i) => (b.latencyMs.p50 === null || slowest === 0 ? [] : [{ x: x(i), y: lineTop + lineHeight - (b.latencyMs.p50 / slowest) * lineHeight }]));
  const days = bucketName(series).endsWith('hours');
  const ticks = series.length > 0 ? [0, Math.floor(series.length / 2), series.length - 1] : [];
  const label =
    total === 0
      ? `No attempts in the period (${series.length} buckets)`
      : `${stats.attempts.succeeded} succeeded, ${stats.attempts.retry} to retry, ${stats.attempts.failed} failed of ${total} attempts, in ${series.length} buckets; busiest bucket ${most} attempts; p50 latency up to ${ms(slowest || null)}`;
  return (
    <figure class="chart-figure">
      <svg class="chart" viewBox={`0 0 ${width} ${height}`} width={width} height={height} role="img" aria-label={label} data-testid="health-chart" data-buckets={series.length}>
        <title>{label}</title>
        <text class="chart-text" x={left} y={barsTop - 3}>
          attempts per {bucketName(series)}
        </text>
        <text class="chart-text" x={left - 4} y={barsTop + 8} text-anchor="end" data-testid="y-max">
          {most}
        </text>
        <text class="chart-text" x={left - 4} y={barsTop + barsHeight} text-anchor="end">
          0
        </text>
        <line class="axis" x1={left} y1={barsTop} x2={left} y2={barsTop + barsHeight} />
        <line class="axis" x1={left} y1={barsTop + barsHeight} x2={width} y2={barsTop + barsHeight} />
        {series.map((b, i) => {
          let y = barsTop + barsHeight;
          return (['succeeded', 'retry', 'failed'] as const).map((kind) => {
            const count = b.attempts[kind];
            // A bucket with any attempt shows at least 2 px of each outcome it had.
            const h = count === 0 ? 0 : Math.max(2, (count / most) * barsHeight);
            y -= h;
            return h > 0 ? <rect key={`${i}-${kind}`} class={`bar-${kind === 'succeeded' ? 'ok' : kind}`} x={left + i * step + 0.5} y={y} width={Math.max(1, step - 1)} height={h} /> : null;
          });
        })}
        <text class="chart-text" x={left} y={lineTop - 3}>
          p50 latency
        </text>
        <text class="chart-text" x={left - 4} y={lineTop + 8} text-anchor="end" data-testid="latency-max">
          {slowest ? ms(slowest) : '—'}
        </text>
        <text class="chart-text" x={left - 4} y={axisY} text-anchor="end">
          0
        </text>
        <line class="axis" x1={left} y1={lineTop} x2={left} y2={axisY} />
        <line class="axis" x1={left} y1={axisY} x2={width} y2={axisY} />
        {points.length > 1 ? <polyline class="line-p50" points={points.map((p) => `${p.x},${p.y}`).join(' ')} /> : null}
        {points.map((p, i) => (
          <circle key={i} class="dot-p50" cx={p.x} cy={p.y} r={2.5} data-testid="latency-point" />
        ))}
        {ticks.map((i, n) => (
          <text key={i} class="chart-text" x={n === 0 ? left : n === 2 ? width : x(i)} y={axisY + 12} text-anchor={n === 0 ? 'start' : n === 2 ? 'end' : 'middle'} data-testid="time-tick">
            {tick(series[i]!.start, days)}
          </text>
        ))}
      </svg>
      <figcaption class="legend">
        <span class="key key-ok">succeeded</span> <span class="key key-retry">failed, retried</span> <span class="key key-failed">failed, final</span> · times in UTC
      </figcaption>
    </figure>
  );
}

function bucketName(series: Stats['series']): string {
  if (series.length < 2) return 'bucket';
  const minutes = (Date.parse(series[1]!.start) - Date.parse(series[0]!.start)) / 60_000;
  return minutes < 60 ? `${minutes} minutes` : minutes === 60 ? 'hour' : `${minutes / 60} hours`;
}
