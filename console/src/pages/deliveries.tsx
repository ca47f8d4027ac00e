import { useState } from 'preact/hooks';
import { api, call, type Notification, type NotificationDetail, type NotificationEvent } from '../api/client';
import { can } from '../session';
import { href } from '../router';
import { FilterForm, Pager, useListFilters } from '../list-filters';
import { ActionButton, useAction } from '../actions';
import { Badge, Checkbox, Field, Json, Loading, Problem, Select, When, useAsync, useFollow, whenText } from '../ui';

const PAGE = 50;

export function statusBadge(status: string) {
  return <Badge kind={status === 'succeeded' ? 'ok' : status === 'failed' ? 'failed' : 'pending'}>{status}</Badge>;
}

const FILTERS = ['status', 'subscriptionId', 'event', 'since', 'until', 'requestId', 'listen'] as const;

/** A copy forwarded by `rewards listen` (docs/delivery.md, "Listen copies"): its url is `listen:<session id>`. */
const LISTEN = 'listen:';
const isListenCopy = (url: string) => url.startsWith(LISTEN);

/** Where a notification went, in a few words: host and path of its URL, or the `rewards listen` session it is a copy for. */
export function endpointName(url: string): string {
  if (isListenCopy(url)) return `rewards listen session ${url.slice(LISTEN.length)}`;
  try {
    const parsed = new URL(url);
    return `${parsed.host}${parsed.pathname === '/' ? '' : parsed.pathname}`;
  } catch {
    return url;
  }
}

/** The event filter's options: one per event the API knows (a missing or unknown one is a type error). */
const EVENT_OPTIONS: Record<NotificationEvent, string> = {
  'registered-requests': 'registered-requests',
  'processed-requests': 'processed-requests',
  'failed-notifications': 'failed-notifications (operational)',
  'disabled-subscriptions': 'disabled-subscriptions (operational)',
  'endpoint-circuits': 'endpoint-circuits (operational)',
};

/**
 * GET /v2/notifications?status=&subscriptionId=&event=&since=&until=&requestId=&limit=50&cursor=:
 * one page at a time; the newest page refreshes itself every 5 seconds while it is open.
 */
/** A notification's request: a link, a test send's sample id, or none (a `disabled-subscriptions` or `endpoint-circuits` notification is about no request). */
function RequestOf({ requestId, test }: { requestId: string | null; test: boolean }) {
  if (requestId === null) return <>—</>;
  return test ? <code>{requestId}</code> : <a href={href(`/requests/${encodeURIComponent(requestId)}`)}>{requestId}</a>;
}

export function Deliveries() {
  const list = useListFilters('/deliveries', FILTERS);
  const { filters, cursor, draft, edit } = list;
  const [live, setLive] = useState(true);
  const subs = useAsync(() => call(api.GET('/v2/subscriptions')), []);
  const page = useAsync(
    () =>
      call(
        api.GET('/v2/notifications', {
          params: {
            query: {
              limit: PAGE,
              ...(filters.status ? { status: filters.status as 'pending' | 'succeeded' | 'failed' } : {}),
              ...(filters.subscriptionId ? { subscriptionId: filters.subscriptionId } : {}),
              ...(filters.event ? { event: filters.event as NotificationEvent } : {}),
              ...(filters.since ? { since: filters.since } : {}),
              ...(filters.until ? { until: filters.until } : {}),
              ...(filters.requestId ? { requestId: filters.requestId } : {}),
              // The copies forwarded by `rewards listen` are left out unless asked for: they would double the rows.
              listen: filters.listen === 'include' || filters.listen === 'only' ? filters.listen : 'exclude',
              ...(cursor ? { cursor } : {}),
            },
          },
        }),
      ),
    list.deps,
  );
  const refreshing = useFollow(page, { everyMs: 5000, follow: live && !cursor });
  const problem = page.error;
  const subscriptions = subs.data ?? [];
  const known = new Map(subscriptions.map((s) => [s._id, s]));
  return (
    <section>
      <h1>Deliveries</h1>
      <FilterForm label="Filter deliveries" testid="delivery-filters" onApply={list.apply} applied={Object.values(filters).filter(Boolean).length}>
        <Select
          label="Status"
          value={draft.status}
          onValue={edit('status')}
          options={[
            ['', 'Any'],
            ['pending', 'Pending'],
            ['succeeded', 'Succeeded'],
            ['failed', 'Failed'],
          ]}
          error={problem?.field('querystring.status')}
          data-testid="filter-status"
        />
        <Select
          label="Endpoint"
          value={draft.subscriptionId}
          onValue={edit('subscriptionId')}
          options={[
            ['', 'Any'] as [string, string],
            ...subscriptions.map((s): [string, string] => [s._id, `${s.description || s.callback.url} (${s.event})`]),
            ...(draft.subscriptionId && !known.has(draft.subscriptionId) ? [[draft.subscriptionId, draft.subscriptionId] as [string, string]] : []),
          ]}
          error={problem?.field('querystring.subscriptionId')}
          data-testid="filter-subscription"
        />
        <Select
          label="Event"
          value={draft.event}
          onValue={edit('event')}
          options={[['', 'Any'], ...Object.entries(EVENT_OPTIONS)]}
          error={problem?.field('querystring.event')}
          data-testid="filter-event"
        />
        <Field label="Created since (UTC)" type="datetime-local" value={draft.since} onValue={edit('since')} error={problem?.field('querystring.since')} data-testid="filter-since" />
        <Field label="Created before (UTC)" type="datetime-local" value={draft.until} onValue={edit('until')} error={problem?.field('querystring.until')} data-testid="filter-until" />
        <Field label="Request id" value={draft.requestId} onValue={edit('requestId', (v) => v.trim())} error={problem?.field('querystring.requestId')} data-testid="filter-request" />
        <Select
          label="Listen copies"
          value={draft.listen}
          onValue={edit('listen')}
          options={[
            ['', 'Hidden'],
            ['include', 'Shown with the others'],
            ['only', 'Only them'],
          ]}
          error={problem?.field('querystring.listen')}
          data-testid="filter-listen"
        />
        <button type="submit" data-testid="apply-filters">
          Filter
        </button>
      </FilterForm>
      <div class="row live">
        <Checkbox label="Refresh every 5 seconds" checked={live} onChecked={setLive} data-testid="auto-refresh" />
        {cursor ? (
          <span class="hint">Older pages do not refresh.</span>
        ) : refreshing ? (
          <span class="hint" data-testid="refreshing">
            Showing new deliveries as they come.
          </span>
        ) : null}
      </div>
      {page.loading && !page.data ? <Loading label="Loading deliveries…" /> : null}
      <Problem problem={problem} unplaced={FILTERS.map((name) => `querystring.${name}`)} />
      {page.data && page.data.data.length === 0 ? <p data-testid="no-deliveries">No deliveries match.</p> : null}
      {page.data && page.data.data.length > 0 ? <NotificationTable rows={page.data.data} /> : null}
      <Pager path="/deliveries" filters={filters} cursor={cursor} nextCursor={page.data?.nextCursor} />
    </section>
  );
}

/**
 * One line per notification: each cell holds one line, cut with an ellipsis, the whole value in its
 * tooltip (`title`) and on the delivery's page, which the time links to.
 */
function NotificationTable({ rows }: { rows: Notification[] }) {
  return (
    <table class="log" data-testid="delivery-table">
      <caption class="sr-only">Notifications, newest first</caption>
      <thead>
        <tr>
          <th scope="col" class="c-created">
            Created
          </th>
          <th scope="col" class="c-event">
            Event
          </th>
          <th scope="col" class="c-endpoint">
            Endpoint
          </th>
          <th scope="col" class="c-status">
            Status
          </th>
          <th scope="col" class="c-attempts">
            Attempts
          </th>
          <th scope="col" class="c-answer">
            Last answer
          </th>
          <th scope="col" class="c-request">
            Request
          </th>
        </tr>
      </thead>
      <tbody>
        {rows.map((n) => {
          const answer = n.lastStatusCode !== null ? `HTTP ${n.lastStatusCode}` : (n.lastError ?? '—');
          const listen = isListenCopy(n.url);
          return (
            <tr key={n.id} data-testid="delivery-row" data-notification-id={n.id} data-listen={listen ? 'true' : undefined}>
              <td>
                <a href={href(`/deliveries/${encodeURIComponent(n.id)}`)}>
                  <When at={n.createdAt} compact />
                </a>
              </td>
              <td title={n.event}>
                {n.test ? <Badge kind="test">test</Badge> : null} <code>{n.event}</code>
              </td>
              <td title={n.url} data-testid="delivery-endpoint">
                {listen ? (
                  <>
                    <Badge kind="off">listen copy</Badge> {n.url.slice(LISTEN.length)}
                  </>
                ) : n.subscriptionId ? (
                  <a href={href(`/subscriptions/${encodeURIComponent(n.subscriptionId)}`)}>{n.url}</a>
                ) : (
                  n.url
                )}
              </td>
              <td
                title={
                  n.waitingFor ? `${n.status}, held: waits for its registered-requests ${n.waitingFor}` : n.held ? `${n.status}, held since ${whenText(n.held.since)}: ${n.held.reason}` : n.status
                }
              >
                {/* Held by the endpoint's circuit breaker: still pending, said as "held" in place of it (the cell is narrow), the reason in the tooltip. */}
                {n.held ? (
                  <>
                    <Badge kind="held" testid="circuit-held">
                      held
                    </Badge>
                    <span class="sr-only"> (pending)</span>
                  </>
                ) : (
                  statusBadge(n.status)
                )}
                {n.waitingFor ? (
                  <span class="hint-inline" data-testid="held">
                    {' '}
                    held: waits for <a href={href(`/deliveries/${encodeURIComponent(n.waitingFor)}`)}>registered-requests</a>
                  </span>
                ) : null}
              </td>
              <td>{n.attemptCount}</td>
              <td title={answer}>{answer}</td>
              <td title={n.requestId ?? undefined}>
                <RequestOf requestId={n.requestId} test={n.test} />
              </td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

/**
 * The receiver's `Retry-After`, as the retry policy reads it (src/domain/notifications/retry-policy.ts):
 * delay-seconds or an HTTP-date, honoured on a 429 or 503 only (as a lower bound, at most 24 h).
 */
function RetryAfter({ value, statusCode }: { value: string; statusCode: number | null }) {
  const text = value.trim();
  const seconds = /^\d+$/.test(text) ? Number(text) : null;
  const date = seconds === null && /^[A-Za-z]{3},? /.test(text) ? Date.parse(text) : NaN;
  const until = Number.isNaN(date) ? null : new Date(date).toISOString();
  return (
    <p class="meta" data-testid="retry-after">
      {seconds !== null ? (
        <>Receiver asked to wait {seconds} s</>
      ) : until !== null ? (
        <>
          Receiver asked to wait until <When at={until} />
        </>
      ) : (
        <>Receiver sent a Retry-After that is neither seconds nor a date</>
      )}{' '}
      (Retry-After: <code>{value}</code>)
      {seconds === null && until === null ? '; it was not used.' : statusCode === 429 || statusCode === 503 ? null : '; only a 429 or 503 sets a wait, so it did not change the schedule.'}
    </p>
  );
}

function Attempts({ attempts }: { attempts: NotificationDetail['attempts'] }) {
  if (attempts.length === 0) return <p>No attempt yet.</p>;
  return (
    <ol class="attempts" data-testid="attempts">
      {attempts.map((a) => (
        <li key={a.attempt} data-testid="attempt">
          <p>
            <strong>Attempt {a.attempt}</strong> <When at={a.at} /> · <Badge kind={a.outcome === 'succeeded' ? 'ok' : a.outcome === 'failed' ? 'failed' : 'pending'}>{a.outcome}</Badge> ·{' '}
            {a.statusCode !== null ? `HTTP ${a.statusCode}` : 'no HTTP answer'} · {a.latencyMs} ms
          </p>
          <p class="url">{a.url}</p>
          {a.error ? <p class="attempt-error">{a.error}</p> : null}
          {a.retryAfter !== null ? <RetryAfter value={a.retryAfter} statusCode={a.statusCode} /> : null}
          {a.requestHeaders ? (
            <details data-testid="attempt-headers">
              <summary>Headers sent ({Object.keys(a.requestHeaders).length}, secrets masked)</summary>
              <table>
                <caption class="sr-only">Headers attempt {a.attempt} sent</caption>
                <thead>
                  <tr>
                    <th scope="col">Header</th>
                    <th scope="col">Value</th>
                  </tr>
                </thead>
                <tbody>
                  {Object.entries(a.requestHeaders).map(([name, value]) => (
                    <tr key={name}>
                      <td>
                        <code>{name}</code>
                      </td>
                      <td>
                        <code>{value}</code>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </details>
          ) : null}
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

/** GET /v2/notifications/{id}: payload, headers, every attempt; POST …/retry. */
export function DeliveryPage({ id }: { id: string }) {
  const n = useAsync(() => call(api.GET('/v2/notifications/{notificationId}', { params: { path: { notificationId: id } } })), [id]);
  const retry = useAction();
  // After Retry now the page follows the delivery (every 0.5 s, for 30 s at most) until the
  // attempt it asked for is logged, as a test send does: its outcome shows where it was asked.
  const [retriedAfter, setRetriedAfter] = useState<number | null>(null);
  const waitingForRetry = useFollow(n, { everyMs: 500, forMs: 30_000, follow: retriedAfter, done: (d) => d.attempts.length > (retriedAfter ?? Infinity) });
  if (n.loading && !n.data) return <Loading label="Loading the delivery…" />;
  if (!n.data)
    return (
      <section>
        <h1>Delivery</h1>
        <Problem problem={n.error} />
      </section>
    );
  const d = n.data;
  const listen = isListenCopy(d.url);
  return (
    <section data-testid="delivery-page">
      <p class="crumbs">
        <a href={href('/deliveries')}>Deliveries</a> /
      </p>
      <div class="title-row">
        <h1>{listen ? 'Listen copy' : `Delivery${d.test ? ' (test)' : ''}`}</h1>
        {statusBadge(d.status)}
        {d.held ? <Badge kind="held">held</Badge> : null}
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
        {listen ? (
          <>
            <dt>Sent to</dt>
            <dd data-testid="listen-copy">
              a copy for the <code>rewards listen</code> session <code>{d.url.slice(LISTEN.length)}</code>: the CLI of that session forwards it to the developer's machine and reports the answer. The
              service never sends it, so it cannot be retried here: retry <a href={href('/deliveries', d.requestId ? { requestId: d.requestId } : {})}>the notification sent to the receiver</a>{' '}
              instead.
            </dd>
          </>
        ) : (
          <>
            <dt>URL</dt>
            <dd class="url">{d.url}</dd>
          </>
        )}
        <dt>Request</dt>
        <dd>
          <RequestOf requestId={d.requestId} test={d.test} />
        </dd>
        {listen ? null : (
          <>
            <dt>Subscription</dt>
            <dd>{d.subscriptionId ? <a href={href(`/subscriptions/${encodeURIComponent(d.subscriptionId)}`)}>{d.subscriptionId}</a> : "the request's own callback URL"}</dd>
          </>
        )}
        <dt>Created</dt>
        <dd>
          <When at={d.createdAt} />
        </dd>
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
            <dd data-testid="next-attempt">
              {d.held ? (
                <span class="inline-when" data-testid="held-by-circuit">
                  <strong>Held</strong> since <When at={d.held.since} /> — {d.held.reason}.
                  {d.subscriptionId ? (
                    <>
                      {' '}
                      <a href={href(`/subscriptions/${encodeURIComponent(d.subscriptionId)}`)}>See the circuit</a> on the subscription's page.
                    </>
                  ) : null}
                </span>
              ) : d.nextAttemptAt !== null ? (
                <When at={d.nextAttemptAt} />
              ) : d.status === 'pending' ? (
                listen ? (
                  'none from the service: waits for the rewards listen CLI to take it'
                ) : (
                  'an attempt is being made now'
                )
              ) : (
                `none: ${d.status === 'succeeded' ? 'delivered' : 'failed'}`
              )}
            </dd>
          </>
        )}
        <dt>Completed</dt>
        <dd>
          <When at={d.completedAt} />
        </dd>
      </dl>
      {can('subscriptions:write') && !listen ? (
        <ActionButton
          testid="retry"
          action={retry}
          onRun={async () => {
            const attemptsBefore = d.attempts.length;
            await call(api.POST('/v2/notifications/{notificationId}/retry', { params: { path: { notificationId: id } } }));
            setRetriedAfter(attemptsBefore);
            n.reload();
          }}
        >
          Retry now
        </ActionButton>
      ) : null}
      {waitingForRetry ? (
        <p role="status" data-testid="retry-waiting">
          Retry sent: waiting for its attempt…
        </p>
      ) : retriedAfter !== null && d.attempts.length <= retriedAfter ? (
        <p role="status">No attempt logged 30 seconds after the retry; the worker may be busy. Reload the page to look again.</p>
      ) : null}
      <Problem problem={retry.problem} />
      <h2>Attempts</h2>
      <Attempts attempts={d.attempts} />
      <h2>Payload</h2>
      <Json value={d.payload} testid="payload" />
    </section>
  );
}
