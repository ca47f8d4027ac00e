import { useEffect, useState } from 'preact/hooks';
import { api, call, type Notification, type NotificationDetail, type Subscription } from '../api/client';
import { can } from '../session';
import { href, navigate, route } from '../router';
import { Badge, Field, Json, Loading, Problem, Select, time, useAction, useAsync } from '../ui';

const PAGE = 50;

export function statusBadge(status: string) {
  return <Badge kind={status === 'succeeded' ? 'ok' : status === 'failed' ? 'failed' : 'pending'}>{status}</Badge>;
}

/** GET /v2/notifications?status=&subscriptionId=&requestId=&limit=50&cursor=: one page at a time. */
export function Deliveries() {
  const query = route.value.query;
  const filters = { status: query.get('status') ?? '', subscriptionId: query.get('subscriptionId') ?? '', requestId: query.get('requestId') ?? '' };
  const cursor = query.get('cursor') ?? '';
  const [draft, setDraft] = useState(filters);
  const page = useAsync(
    () =>
      call(
        api.GET('/v2/notifications', {
          params: {
            query: {
              limit: PAGE,
              ...(filters.status ? { status: filters.status as 'pending' | 'succeeded' | 'failed' } : {}),
              ...(filters.subscriptionId ? { subscriptionId: filters.subscriptionId } : {}),
              ...(filters.requestId ? { requestId: filters.requestId } : {}),
              ...(cursor ? { cursor } : {}),
            },
          },
        }),
      ),
    [filters.status, filters.subscriptionId, filters.requestId, cursor],
  );
  const problem = page.error;
  return (
    <section>
      <h1>Deliveries</h1>
      <form
        class="form inline filters"
        role="search"
        aria-label="Filter deliveries"
        data-testid="delivery-filters"
        onSubmit={(e) => {
          e.preventDefault();
          navigate(href('/deliveries', draft));
        }}
      >
        <Select
          label="Status"
          value={draft.status}
          onValue={(v) => setDraft({ ...draft, status: v })}
          options={[
            ['', 'Any'],
            ['pending', 'Pending'],
            ['succeeded', 'Succeeded'],
            ['failed', 'Failed'],
          ]}
          error={problem?.field('querystring.status')}
          data-testid="filter-status"
        />
        <Field label="Subscription id" value={draft.subscriptionId} onValue={(v) => setDraft({ ...draft, subscriptionId: v.trim() })} error={problem?.field('querystring.subscriptionId')} data-testid="filter-subscription" />
        <Field label="Request id" value={draft.requestId} onValue={(v) => setDraft({ ...draft, requestId: v.trim() })} error={problem?.field('querystring.requestId')} data-testid="filter-request" />
        <button type="submit" data-testid="apply-filters">
          Filter
        </button>
      </form>
      {page.loading ? <Loading label="Loading deliveries…" /> : null}
      <Problem problem={problem} unplaced={['querystring.status', 'querystring.subscriptionId', 'querystring.requestId']} />
      {page.data && page.data.data.length === 0 ? <p data-testid="no-deliveries">No deliveries match.</p> : null}
      {page.data && page.data.data.length > 0 ? <NotificationTable rows={page.data.data} /> : null}
      <nav aria-label="Pages" class="pager">
        {cursor ? (
          <a href={href('/deliveries', filters)} data-testid="first-page">
            Newest
          </a>
        ) : null}
        {page.data?.nextCursor ? (
          <a href={href('/deliveries', { ...filters, cursor: page.data.nextCursor })} data-testid="next-page">
            Older
          </a>
        ) : null}
      </nav>
    </section>
  );
}

export function NotificationTable({ rows }: { rows: Notification[] }) {
  return (
    <table data-testid="delivery-table">
      <caption class="sr-only">Notifications, newest first</caption>
      <thead>
        <tr>
          <th scope="col">Created</th>
          <th scope="col">Event</th>
          <th scope="col">Status</th>
          <th scope="col">Attempts</th>
          <th scope="col">Last answer</th>
          <th scope="col">Request</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((n) => (
          <tr key={n.id} data-testid="delivery-row" data-notification-id={n.id}>
            <td>
              <a href={href(`/deliveries/${encodeURIComponent(n.id)}`)}>{time(n.createdAt)}</a>
            </td>
            <td>
              <code>{n.event}</code> {n.test ? <Badge kind="test">test</Badge> : null}
            </td>
            <td>
              {statusBadge(n.status)}
              {n.waitingFor ? (
                <span class="hint" data-testid="held">
                  {' '}
                  held: waits for <a href={href(`/deliveries/${encodeURIComponent(n.waitingFor)}`)}>registered-requests</a>
                </span>
              ) : null}
            </td>
            <td>{n.attemptCount}</td>
            <td>{n.lastStatusCode !== null ? `HTTP ${n.lastStatusCode}` : (n.lastError ?? '—')}</td>
            <td>
              {n.test ? <code>{n.requestId}</code> : <a href={href(`/requests/${encodeURIComponent(n.requestId)}`)}>{n.requestId}</a>}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function Attempts({ attempts }: { attempts: NotificationDetail['attempts'] }) {
  if (attempts.length === 0) return <p>No attempt yet.</p>;
  return (
    <ol class="attempts" data-testid="attempts">
      {attempts.map((a) => (
        <li key={a.attempt} data-testid="attempt">
          <p>
            <strong>Attempt {a.attempt}</strong> {time(a.at)} · <Badge kind={a.outcome === 'succeeded' ? 'ok' : a.outcome === 'failed' ? 'failed' : 'pending'}>{a.outcome}</Badge> · {a.statusCode !== null ? `HTTP ${a.statusCode}` : 'no HTTP answer'} · {a.latencyMs} ms
          </p>
          <p class="url">{a.url}</p>
          {a.error ? <p class="attempt-error">{a.error}</p> : null}
          {a.responseBody !== null && a.responseBody !== '' ? (
            <details>
              <summary>Receiver's answer (first 1 KiB)</summary>
              <pre class="body" data-testid="response-body" tabIndex={0}>
                {a.responseBody}
              </pre>
            </details>
          ) : null}
        </li>
      ))}
    </ol>
  );
}

/** The headers every attempt carries (docs/delivery.md), with secrets masked. */
function headersOf(n: NotificationDetail, s: Subscription | undefined): [string, string][] {
  const headers: [string, string][] = [
    ['content-type', 'application/json'],
    ['webhook-id', n.id],
    ['webhook-timestamp', '(the attempt time, Unix seconds)'],
    ['webhook-signature', 'v1,•••• (HMAC-SHA256 with the signing secret)'],
    ['x-webhook-event', n.event],
  ];
  if (n.test) headers.push(['x-webhook-test', 'true']);
  const auth = s?.callback.authorization as Record<string, unknown> | undefined;
  if (auth?.Bearer) headers.push(['authorization', `Bearer ${String(auth.Bearer)}`]);
  else if (auth?.Basic) headers.push(['authorization', `Basic ${String(auth.Basic)}`]);
  else if (auth?.oauth2 || (auth?.mtls as { twoFactor?: unknown } | undefined)?.twoFactor) headers.push(['authorization', 'Bearer •••• (OAuth2 token)']);
  for (const [name, value] of Object.entries(s?.callback.customHeaders ?? {})) headers.push([name, value]);
  return headers;
}

/** GET /v2/notifications/{id}: payload, headers, every attempt; POST …/retry. */
export function DeliveryPage({ id }: { id: string }) {
  const n = useAsync(() => call(api.GET('/v2/notifications/{notificationId}', { params: { path: { notificationId: id } } })), [id]);
  const subId = n.data?.subscriptionId ?? null;
  const sub = useAsync(async () => (subId ? call(api.GET('/v2/subscriptions/{subscriptionId}', { params: { path: { subscriptionId: subId } } })).catch(() => undefined) : undefined), [subId]);
  const retry = useAction();
  // After Retry now the page follows the delivery (every 0.5 s, for 30 s at most) until the
  // attempt it asked for is logged, as a test send does: its outcome shows where it was asked.
  const [retriedAfter, setRetriedAfter] = useState<number | null>(null);
  const [polls, setPolls] = useState(0);
  useEffect(() => {
    if (retriedAfter === null || !n.data || n.loading) return;
    if (n.data.attempts.length > retriedAfter || polls >= 60) {
      setRetriedAfter(null);
      return;
    }
    const timer = setTimeout(() => {
      setPolls((count) => count + 1);
      n.reload();
    }, 500);
    return () => clearTimeout(timer);
  }, [retriedAfter, n.data, n.loading, polls]);
  if (n.loading && !n.data) return <Loading label="Loading the delivery…" />;
  if (!n.data)
    return (
      <section>
        <h1>Delivery</h1>
        <Problem problem={n.error} />
      </section>
    );
  const d = n.data;
  return (
    <section data-testid="delivery-page">
      <p class="crumbs">
        <a href={href('/deliveries')}>Deliveries</a> /
      </p>
      <div class="title-row">
        <h1>Delivery {d.test ? '(test)' : ''}</h1>
        {statusBadge(d.status)}
      </div>
      <dl class="facts">
        <dt>Notification id (webhook-id)</dt>
        <dd>
          <code>{d.id}</code>
        </dd>
        <dt>Event</dt>
        <dd>
          <code>{d.event}</code>
        </dd>
        <dt>URL</dt>
        <dd class="url">{d.url}</dd>
        <dt>Request</dt>
        <dd>{d.test ? <code>{d.requestId}</code> : <a href={href(`/requests/${encodeURIComponent(d.requestId)}`)}>{d.requestId}</a>}</dd>
        <dt>Subscription</dt>
        <dd>{d.subscriptionId ? <a href={href(`/subscriptions/${encodeURIComponent(d.subscriptionId)}`)}>{d.subscriptionId}</a> : "the request's own callback URL"}</dd>
        <dt>Created</dt>
        <dd>{time(d.createdAt)}</dd>
        {d.waitingFor ? (
          <>
            <dt>Waiting for</dt>
            <dd data-testid="waiting-for">
              <a href={href(`/deliveries/${encodeURIComponent(d.waitingFor)}`)}>{d.waitingFor}</a>: this request's registered-requests to the same URL. This notification is sent once that one has
              ended (delivered, or failed after its last attempt).
            </dd>
          </>
        ) : (
          <>
            <dt>Next attempt</dt>
            <dd>{time(d.nextAttemptAt)}</dd>
          </>
        )}
        <dt>Completed</dt>
        <dd>{time(d.completedAt)}</dd>
      </dl>
      {can('subscriptions:write') ? (
        <button
          type="button"
          data-testid="retry"
          disabled={retry.busy}
          onClick={() =>
            retry.run(async () => {
              const attemptsBefore = d.attempts.length;
              await call(api.POST('/v2/notifications/{notificationId}/retry', { params: { path: { notificationId: id } } }));
              setPolls(0);
              setRetriedAfter(attemptsBefore);
              n.reload();
            })
          }
        >
          Retry now
        </button>
      ) : null}
      {retriedAfter !== null ? (
        <p role="status" data-testid="retry-waiting">
          Retry sent: waiting for its attempt…
        </p>
      ) : null}
      <Problem problem={retry.problem} />
      <h2>Attempts</h2>
      <Attempts attempts={d.attempts} />
      <h2>Payload</h2>
      <Json value={d.payload} testid="payload" />
      <h2>Headers</h2>
      <p class="hint">As sent now (the subscription's current authorization and custom headers); secrets masked.</p>
      {sub.loading ? <Loading /> : null}
      <table data-testid="headers">
        <caption class="sr-only">Request headers</caption>
        <thead>
          <tr>
            <th scope="col">Header</th>
            <th scope="col">Value</th>
          </tr>
        </thead>
        <tbody>
          {headersOf(d, sub.data).map(([name, value]) => (
            <tr key={name}>
              <td>
                <code>{name}</code>
              </td>
              <td class="url">{value}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
