import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { api, call, type NotificationDetail, type RequestEvent, type RewardRequest } from '../api/client';
import { can } from '../session';
import { href, navigate } from '../router';
import { FilterForm, Pager, useListFilters } from '../list-filters';
import { Badge, Field, Json, Loading, Problem, Select, When, useAsync } from '../ui';
import { endpointName, statusBadge } from './deliveries';

const REQUEST_FILTERS = ['status', 'experience', 'since', 'until'] as const;

/**
 * GET /v2/requests?status=&experience=&since=&until=&limit=50&cursor=: the account's requests,
 * newest first, filtered; and a request found by its id.
 */
export function RequestSearch() {
  const list = useListFilters('/requests', REQUEST_FILTERS);
  const { filters, cursor, draft, edit } = list;
  const [id, setId] = useState('');
  const page = useAsync(
    () =>
      call(
        api.GET('/v2/requests', {
          params: {
            query: {
              limit: PAGE,
              ...(filters.status ? { status: filters.status as RewardRequest['status'] } : {}),
              ...(filters.experience ? { experience: filters.experience } : {}),
              ...(filters.since ? { since: filters.since } : {}),
              ...(filters.until ? { until: filters.until } : {}),
              ...(cursor ? { cursor } : {}),
            },
          },
        }),
      ),
    list.deps,
  );
  const problem = page.error;
  return (
    <section>
      <h1>Requests</h1>
      <p class="lede">
        The account's reward requests, newest first. Open one for its whole story: received, registered or rejected, processed, partner events, and every notification with every attempt.
      </p>
      <form
        class="form inline"
        role="search"
        aria-label="Find a request by id"
        data-testid="request-search"
        onSubmit={(e) => {
          e.preventDefault();
          if (id.trim()) navigate(href(`/requests/${encodeURIComponent(id.trim())}`));
        }}
      >
        <Field label="Request id" value={id} onValue={setId} placeholder="req_…" required data-testid="request-id" />
        <button type="submit" data-testid="find-request">
          Show timeline
        </button>
      </form>
      <FilterForm label="Filter requests" testid="request-filters" onApply={list.apply} applied={Object.values(filters).filter(Boolean).length}>
        <Select
          label="Status"
          value={draft.status}
          onValue={edit('status')}
          options={[
            ['', 'Any'],
            ['received', 'Received'],
            ['registered', 'Registered'],
            ['rejected', 'Rejected'],
            ['processed', 'Processed'],
            ['failed', 'Failed'],
          ]}
          error={problem?.field('querystring.status')}
          data-testid="filter-request-status"
        />
        <Field label="Experience" value={draft.experience} onValue={edit('experience', (v) => v.trim())} error={problem?.field('querystring.experience')} data-testid="filter-experience" />
        <Field label="Received since (UTC)" type="datetime-local" value={draft.since} onValue={edit('since')} error={problem?.field('querystring.since')} data-testid="filter-request-since" />
        <Field label="Received before (UTC)" type="datetime-local" value={draft.until} onValue={edit('until')} error={problem?.field('querystring.until')} data-testid="filter-request-until" />
        <button type="submit" data-testid="apply-request-filters">
          Filter
        </button>
      </FilterForm>
      {page.loading && !page.data ? <Loading label="Loading requests…" /> : null}
      <Problem problem={problem} unplaced={REQUEST_FILTERS.map((name) => `querystring.${name}`)} />
      {page.data && page.data.data.length === 0 ? (
        <p data-testid="no-requests">
          {cursor || Object.values(filters).some(Boolean) ? 'No requests match.' : 'No requests yet: they appear here as soon as the API accepts them (POST /v2/requests).'}
        </p>
      ) : null}
      {page.data && page.data.data.length > 0 ? (
        <table data-testid="request-table">
          <caption class="sr-only">Reward requests, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Received</th>
              <th scope="col">Request</th>
              <th scope="col">Experience</th>
              <th scope="col">Status</th>
              <th scope="col">Outcome</th>
            </tr>
          </thead>
          <tbody>
            {page.data.data.map((r) => (
              <tr key={r.id} data-testid="request-row" data-request-id={r.id}>
                <td>
                  <When at={r.createdAt} />
                </td>
                <td>
                  <a href={href(`/requests/${encodeURIComponent(r.id)}`)}>{r.id}</a>
                </td>
                <td>
                  <code>{r.experience}</code>
                </td>
                <td>
                  <Badge kind={r.status === 'processed' || r.status === 'registered' ? 'ok' : r.status === 'rejected' || r.status === 'failed' ? 'failed' : 'pending'}>{r.status}</Badge>
                </td>
                <td>{outcomeOf(r)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      <Pager path="/requests" filters={filters} cursor={cursor} nextCursor={page.data?.nextCursor} prefix="requests-" />
    </section>
  );
}

/** One line on what became of a request. */
function outcomeOf(r: RewardRequest): string {
  if (r.status === 'rejected') return `${r.errorCode ?? 'rejected'}${r.message ? `: ${r.message}` : ''}`;
  if (r.status === 'processed') return `${r.delivered?.length ?? 0} delivered, ${r.canceled?.length ?? 0} canceled`;
  if (r.status === 'registered') return r.rewardValue ? `reward value ${r.rewardValue}` : 'registered';
  return '—';
}

const PAGE = 50;

interface Entry {
  at: string;
  order: number;
  kind: string;
  title: string;
  body?: ComponentChildren;
}

const LIFECYCLE_EVENTS = new Set(['pedido-registrado', 'pedido-recusado', 'pedido-processado']);

function requestEntries(r: RewardRequest): Entry[] {
  const entries: Entry[] = [
    {
      at: r.createdAt,
      order: 0,
      kind: 'received',
      title: 'Received',
      body: (
        <p>
          Experience <code>{r.experience}</code>
          {r.event ? (
            <>
              {' '}
              · event <code>{r.event}</code>
            </>
          ) : null}
        </p>
      ),
    },
  ];
  if (r.registeredAt) {
    entries.push(
      r.status === 'rejected'
        ? { at: r.registeredAt, order: 1, kind: 'rejected', title: `Rejected: ${r.errorCode ?? ''}`, body: <p>{r.message}</p> }
        : { at: r.registeredAt, order: 1, kind: 'registered', title: 'Registered', body: r.rewardValue ? <p>Reward value {r.rewardValue}</p> : undefined },
    );
  }
  if (r.concluded) {
    entries.push({
      at: r.concluded,
      order: 2,
      kind: 'processed',
      title: `Processed: ${r.delivered?.length ?? 0} delivered, ${r.canceled?.length ?? 0} canceled`,
      body: (
        <>
          {r.delivered?.length ? (
            <>
              <h4>Delivered</h4>
              <ul data-testid="delivered-prizes">
                {r.delivered.map((p, i) => (
                  <li key={i}>
                    {p.quantity} × {p.deliveryDetail.info.bucket} ({p.title}) value {p.value}
                    {p.deliveryDetail.info.coupon ? (
                      <>
                        {' '}
                        · coupon <code>{p.deliveryDetail.info.coupon}</code>
                      </>
                    ) : null}
                    {p.deliveryDetail.info.paymentId ? (
                      <>
                        {' '}
                        · payment <code>{p.deliveryDetail.info.paymentId}</code>
                      </>
                    ) : null}
                  </li>
                ))}
              </ul>
            </>
          ) : null}
          {r.canceled?.length ? (
            <>
              <h4>Canceled</h4>
              <ul data-testid="canceled-prizes">
                {r.canceled.map((p, i) => (
                  <li key={i}>
                    {p.quantity} × {p.title}: {p.deliveryDetail.info.reason}
                  </li>
                ))}
              </ul>
            </>
          ) : null}
        </>
      ),
    });
  }
  if (r.status === 'failed')
    entries.push({ at: r.updatedAt, order: 2, kind: 'failed', title: `Processing failed${r.errorCode ? `: ${r.errorCode}` : ''}`, body: r.message ? <p>{r.message}</p> : undefined });
  return entries;
}

function eventEntries(events: RequestEvent[]): Entry[] {
  return events
    .filter((e) => !LIFECYCLE_EVENTS.has(e.name))
    .map((e) => ({
      at: e.date,
      order: 3,
      kind: 'event',
      title: `${e.title} (${e.name})`,
      body: (
        <>
          <p>
            Reference <code>{e.refId}</code>
          </p>
          {e.data && Object.keys(e.data).length ? <Json value={e.data} /> : null}
        </>
      ),
    }));
}

function notificationEntries(list: NotificationDetail[]): Entry[] {
  return list.flatMap((n) => [
    {
      at: n.createdAt,
      order: 4,
      kind: 'notification',
      title: `Notification ${n.event} to ${endpointName(n.url)}`,
      body: (
        <p>
          <a href={href(`/deliveries/${encodeURIComponent(n.id)}`)}>{n.id}</a> → <span class="url">{n.url}</span> {statusBadge(n.status)}
        </p>
      ),
    },
    ...n.attempts.map((a) => ({
      at: a.at,
      order: 5,
      kind: a.outcome === 'succeeded' ? 'attempt-ok' : 'attempt-bad',
      title: `Attempt ${a.attempt} of ${n.event} to ${endpointName(a.url || n.url)}: ${a.outcome} (${a.statusCode !== null ? `HTTP ${a.statusCode}` : 'no answer'}, ${a.latencyMs} ms)`,
      body: (
        <>
          {a.error ? <p class="attempt-error">{a.error}</p> : null}
          {a.responseBody ? (
            <details>
              <summary>Receiver's answer</summary>
              <pre class="body" data-testid="response-body" tabIndex={0}>
                {a.responseBody}
              </pre>
            </details>
          ) : null}
        </>
      ),
    })),
  ]);
}

/** GET /v2/requests/{id}, GET /v2/request/{id}/events and GET /v2/notifications?requestId= (one page, each with its attempts), merged in time order. */
export function RequestTimeline({ id }: { id: string }) {
  const request = useAsync(() => call(api.GET('/v2/requests/{id}', { params: { path: { id } } })), [id]);
  const events = useAsync(async () => (can('events:read') ? call(api.GET('/v2/request/{id}/events', { params: { path: { id } } })) : []), [id]);
  const notifications = useAsync(async () => {
    if (!can('subscriptions:read')) return { list: [] as NotificationDetail[], more: false };
    const page = await call(api.GET('/v2/notifications', { params: { query: { requestId: id, limit: 50 } } }));
    const list = await Promise.all(page.data.map((n) => call(api.GET('/v2/notifications/{notificationId}', { params: { path: { notificationId: n.id } } }))));
    return { list, more: page.nextCursor !== null };
  }, [id]);
  if (request.loading && !request.data) return <Loading label="Loading the request…" />;
  if (!request.data)
    return (
      <section>
        <h1>Request</h1>
        <Problem problem={request.error} />
        <p>
          <a href={href('/requests')}>Find another request</a>
        </p>
      </section>
    );
  const r = request.data;
  const entries = [...requestEntries(r), ...eventEntries(events.data ?? []), ...notificationEntries(notifications.data?.list ?? [])].sort((a, b) => a.at.localeCompare(b.at) || a.order - b.order);
  return (
    <section data-testid="request-page">
      <p class="crumbs">
        <a href={href('/requests')}>Requests</a> /
      </p>
      <div class="title-row">
        <h1>
          Request <code>{r.id}</code>
        </h1>
        <Badge kind={r.status === 'processed' || r.status === 'registered' ? 'ok' : r.status === 'received' ? 'pending' : 'failed'}>{r.status}</Badge>
      </div>
      {events.loading || notifications.loading ? <Loading label="Loading events and notifications…" /> : null}
      <Problem problem={events.error} />
      <Problem problem={notifications.error} />
      <h2>Timeline</h2>
      {events.loading || notifications.loading ? null : (
        <ol class="timeline" data-testid="timeline">
          {entries.map((e, i) => (
            <li key={i} class={`tl tl-${e.kind}`} data-testid="timeline-entry" data-kind={e.kind}>
              <When at={e.at} ms />
              <h3>{e.title}</h3>
              {e.body}
            </li>
          ))}
        </ol>
      )}
      {notifications.data?.more ? (
        <p>
          More notifications than shown: <a href={href('/deliveries', { requestId: r.id })}>see them all in the delivery log</a>.
        </p>
      ) : null}
      <h2>Request data</h2>
      {r.data === null || r.data === undefined ? (
        <p class="hint" data-testid="request-data">
          No data: the request was sent without a <code>data</code> member.
        </p>
      ) : (
        <Json value={r.data} testid="request-data" />
      )}
    </section>
  );
}
