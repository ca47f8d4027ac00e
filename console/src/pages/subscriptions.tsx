import { useState } from 'preact/hooks';
import { api, call, type SigningSecretView, type Subscription } from '../api/client';
import { can } from '../session';
import { href, navigate } from '../router';
import { ActionButton, ActionForm, ConfirmButton, useAction } from '../actions';
import { Badge, CopyButton, Field, Loading, Problem, Select, ShownOnce, When, utcInputToIso, useAsync, useFollow } from '../ui';
import { SubscriptionForm, bodyOf, formOf } from './subscription-form';
import { CircuitState } from './circuit';

export function SubscriptionList() {
  const subs = useAsync(() => call(api.GET('/v2/subscriptions')), []);
  return (
    <section>
      <div class="title-row">
        <h1>Subscriptions</h1>
        {can('subscriptions:write') ? (
          <a class="button" href={href('/subscriptions/new')} data-testid="new-subscription">
            New subscription
          </a>
        ) : null}
      </div>
      {subs.loading && !subs.data ? <Loading label="Loading subscriptions…" /> : null}
      <Problem problem={subs.error} />
      {subs.data && subs.data.length === 0 ? <p>No subscriptions yet.</p> : null}
      {subs.data && subs.data.length > 0 ? (
        <table data-testid="subscription-table">
          <caption class="sr-only">Subscriptions of the account</caption>
          <thead>
            <tr>
              <th scope="col">Description</th>
              <th scope="col">Event</th>
              <th scope="col">URL</th>
              <th scope="col">Experiences</th>
              <th scope="col">State</th>
            </tr>
          </thead>
          <tbody>
            {subs.data.map((s) => (
              <tr key={s._id} data-testid="subscription-row" data-subscription-id={s._id}>
                <td>
                  <a href={href(`/subscriptions/${encodeURIComponent(s._id)}`)}>{s.description || s._id}</a>
                </td>
                <td>
                  <code>{s.event}</code>
                </td>
                <td class="url">{s.callback.url}</td>
                <td>{s.experiences.length ? s.experiences.join(', ') : 'all'}</td>
                <td>
                  <State s={s} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </section>
  );
}

function State({ s }: { s: Subscription }) {
  if (s.disabledReason) return <Badge kind="failed">switched off</Badge>;
  return s.active ? <Badge kind="ok">active</Badge> : <Badge kind="off">inactive</Badge>;
}

export function NewSubscription() {
  const action = useAction();
  const [secret, setSecret] = useState<{ id: string; secret: string } | null>(null);
  if (!can('subscriptions:write'))
    return (
      <section>
        <h1>New subscription</h1>
        <p data-testid="read-only">
          This session can look at subscriptions but not create them. Sign in with a client that holds the <code>subscriptions:write</code> scope.
        </p>
      </section>
    );
  return (
    <section>
      <h1>New subscription</h1>
      {secret ? (
        <>
          <ShownOnce label="Signing secret" value={secret.secret} testid="new-signing-secret" note="give it to your receiver; the subscription's page reveals it again when you need it." />
          <p>
            <a href={href(`/subscriptions/${encodeURIComponent(secret.id)}`)} data-testid="open-created">
              Open the subscription
            </a>
          </p>
        </>
      ) : (
        <SubscriptionForm
          initial={formOf()}
          action={action}
          submitLabel="Create subscription"
          onSubmit={async (form) => {
            const created = await call(api.POST('/v2/subscriptions', { body: bodyOf(form, true) }));
            setSecret({ id: created._id, secret: (created as { secret?: string }).secret ?? '' });
          }}
        />
      )}
    </section>
  );
}

export function SubscriptionPage({ id }: { id: string }) {
  const path = { subscriptionId: id };
  const sub = useAsync(() => call(api.GET('/v2/subscriptions/{subscriptionId}', { params: { path } })), [id]);
  const [editing, setEditing] = useState(false);
  const save = useAction();
  const toggle = useAction();
  const remove = useAction();
  const writable = can('subscriptions:write');
  if (sub.loading && !sub.data) return <Loading label="Loading subscription…" />;
  if (sub.error || !sub.data)
    return (
      <section>
        <h1>Subscription</h1>
        <Problem problem={sub.error} />
      </section>
    );
  const s = sub.data;
  return (
    <section data-testid="subscription-page">
      <p class="crumbs">
        <a href={href('/subscriptions')}>Subscriptions</a> /
      </p>
      <div class="title-row">
        <h1 data-testid="subscription-title">{s.description || s._id}</h1>
        <State s={s} />
      </div>
      {s.disabledReason ? (
        <p class="disabled-reason" role="note" data-testid="disabled-reason">
          <strong>Switched off by the service</strong> <When at={s.disabledAt} />: {s.disabledReason}
        </p>
      ) : null}
      <Circuit id={id} />
      <dl class="facts">
        <dt>Id</dt>
        <dd>
          <code>{s._id}</code>
        </dd>
        <dt>Event</dt>
        <dd>
          <code>{s.event}</code>
        </dd>
        <dt>URL</dt>
        <dd class="url">{s.callback.url}</dd>
        <dt>Authorization</dt>
        <dd>{s.callback.authorization ? Object.keys(s.callback.authorization).join(', ') : 'none'}</dd>
        <dt>Experiences</dt>
        <dd>{s.experiences.length ? s.experiences.join(', ') : 'every experience'}</dd>
        <dt>Rate limit</dt>
        <dd>{s.rateLimit ? `${s.rateLimit} per second` : 'none'}</dd>
        <dt>Updated</dt>
        <dd>
          <When at={s.updatedAt} />
        </dd>
      </dl>
      <p>
        <a href={href('/deliveries', { subscriptionId: s._id })} data-testid="subscription-deliveries">
          Deliveries of this subscription
        </a>
      </p>
      {writable ? (
        <div class="actions">
          <button type="button" class="secondary" data-testid="edit-subscription" aria-expanded={editing} onClick={() => setEditing(!editing)}>
            {editing ? 'Close the editor' : 'Edit'}
          </button>
          <ActionButton
            kind="secondary"
            testid="toggle-active"
            action={toggle}
            onRun={async () => {
              await call(api.PUT('/v2/subscriptions/{subscriptionId}', { params: { path }, body: { active: !s.active } }));
              sub.reload();
            }}
          >
            {s.active ? 'Deactivate' : 'Activate'}
          </ActionButton>
          <ConfirmButton
            testid="delete-subscription"
            question="Delete this subscription and its signing secrets?"
            action={remove}
            onConfirm={async () => {
              await call(api.DELETE('/v2/subscriptions/{subscriptionId}', { params: { path } }));
              navigate(href('/subscriptions'));
            }}
          >
            Delete
          </ConfirmButton>
        </div>
      ) : null}
      <Problem problem={toggle.problem} />
      <Problem problem={remove.problem} />
      {editing ? (
        <section aria-labelledby="edit-heading">
          <h2 id="edit-heading">Edit</h2>
          <SubscriptionForm
            key={s.updatedAt}
            initial={formOf(s)}
            action={save}
            submitLabel="Save changes"
            onSubmit={async (form) => {
              await call(api.PUT('/v2/subscriptions/{subscriptionId}', { params: { path }, body: bodyOf(form, false) }));
              setEditing(false);
              sub.reload();
            }}
          />
        </section>
      ) : null}
      {writable ? (
        <>
          <TestSend id={id} />
          <Recover id={id} />
          <SigningSecret id={id} url={s.callback.url} />
        </>
      ) : null}
    </section>
  );
}

/**
 * The circuit breaker of the subscription's URL (`circuit` of GET …/stats): reloaded every 5
 * seconds while it is open or sending what it held, so the next probe and the count stay current.
 */
function Circuit({ id }: { id: string }) {
  const stats = useAsync(() => call(api.GET('/v2/subscriptions/{subscriptionId}/stats', { params: { path: { subscriptionId: id }, query: { window: '1h' } } })), [id]);
  const state = stats.data?.circuit.state;
  useFollow(stats, { everyMs: 5000, follow: state === 'open' || state === 'draining' ? state : null });
  if (stats.error) return <Problem problem={stats.error} />;
  if (!stats.data) return null;
  return <CircuitState circuit={stats.data.circuit} note={can('subscriptions:write') ? 'A test send goes out anyway, and its answer counts as a probe.' : undefined} />;
}

/** POST …/test → 202 {notificationId}, then GET /v2/notifications/{id} until its one attempt is logged. */
function TestSend({ id }: { id: string }) {
  const action = useAction();
  const [sent, setSent] = useState<string | null>(null);
  const followed = useAsync(async () => (sent ? call(api.GET('/v2/notifications/{notificationId}', { params: { path: { notificationId: sent } } })) : undefined), [sent]);
  // Until the test's own notification is in (a previous one may still be shown while it loads).
  const result = followed.data && followed.data.id === sent ? followed.data : undefined;
  const following = useFollow(followed, { everyMs: 500, forMs: 30_000, follow: sent, done: (n) => n?.id === sent && (n.status !== 'pending' || n.attempts.length > 0) });
  const waiting = following || (sent !== null && !result && followed.loading);
  const attempt = result?.attempts[result.attempts.length - 1];
  return (
    <section aria-labelledby="test-heading" class="panel">
      <h2 id="test-heading">Send a test</h2>
      <p>
        One notification with a sample body, one attempt, header <code>x-webhook-test: true</code>.
      </p>
      <ActionButton
        testid="send-test"
        action={action}
        disabled={waiting}
        onRun={async () => {
          setSent(null);
          const answer = await call(api.POST('/v2/subscriptions/{subscriptionId}/test', { params: { path: { subscriptionId: id } } }));
          setSent(answer.notificationId);
        }}
      >
        Send test
      </ActionButton>
      <Problem problem={action.problem} />
      <div aria-live="polite" data-testid="test-result">
        {waiting ? <Loading label="Waiting for the receiver's answer…" /> : null}
        {result && !waiting ? (
          attempt ? (
            <p class={attempt.outcome === 'succeeded' ? 'outcome ok' : 'outcome bad'}>
              {attempt.outcome === 'succeeded' ? 'Delivered' : 'Failed'}: {attempt.statusCode !== null ? `HTTP ${attempt.statusCode}` : 'no answer'}
              {attempt.error ? ` — ${attempt.error}` : ''} in {attempt.latencyMs} ms. <a href={href(`/deliveries/${encodeURIComponent(result.id)}`)}>See the delivery</a>
            </p>
          ) : (
            <p>
              Still pending. <a href={href(`/deliveries/${encodeURIComponent(result.id)}`)}>See the delivery</a>
            </p>
          )
        ) : null}
      </div>
    </section>
  );
}

/** POST …/recover {since, until?} → 202 {recovered}. */
function Recover({ id }: { id: string }) {
  const action = useAction();
  const [since, setSince] = useState('');
  const [until, setUntil] = useState('');
  const [recovered, setRecovered] = useState<number | null>(null);
  return (
    <section aria-labelledby="recover-heading" class="panel">
      <h2 id="recover-heading">Recover failed deliveries</h2>
      <p>Every notification that failed in the window gets one more attempt now. Times are UTC, like the payloads.</p>
      <ActionForm
        action={action}
        inline
        testid="recover-form"
        onRun={async () => {
          setRecovered(null);
          const answer = await call(
            api.POST('/v2/subscriptions/{subscriptionId}/recover', {
              params: { path: { subscriptionId: id } },
              body: { since: utcInputToIso(since), ...(until ? { until: utcInputToIso(until) } : {}) },
            }),
          );
          setRecovered(answer.recovered);
        }}
      >
        <Field label="Failed since (UTC)" type="datetime-local" value={since} onValue={setSince} required error={action.problem?.field('body.since')} data-testid="recover-since" />
        <Field label="Until (UTC, optional)" type="datetime-local" value={until} onValue={setUntil} error={action.problem?.field('body.until')} data-testid="recover-until" />
        <button type="submit" disabled={action.busy} data-testid="recover">
          Recover
        </button>
      </ActionForm>
      <Problem problem={action.problem} unplaced={['body.since', 'body.until']} />
      {recovered !== null ? (
        <p role="status" data-testid="recovered">
          {recovered} notification{recovered === 1 ? '' : 's'} recovered.
        </p>
      ) : null}
    </section>
  );
}

const OVERLAPS: [string, string][] = [
  ['0m', 'stops at once'],
  ['1h', 'for 1 hour'],
  ['24h', 'for 24 hours'],
  ['3d', 'for 3 days'],
  ['7d', 'for 7 days'],
];

/**
 * The signing secret: revealed on demand (GET …/secret), hidden again with a click; rotated after
 * a confirmation, the old one signing on for the overlap chosen (POST …/secret/rotate {overlap}).
 * It is the callback URL's: the account's other subscriptions at that URL share it.
 */
function SigningSecret({ id, url }: { id: string; url: string }) {
  const action = useAction();
  const [secret, setSecret] = useState<SigningSecretView | null>(null);
  const [rotated, setRotated] = useState(false);
  const [overlap, setOverlap] = useState('24h');
  const chosen = OVERLAPS.find(([value]) => value === overlap)?.[1] ?? overlap;
  return (
    <section aria-labelledby="secret-heading" class="panel">
      <h2 id="secret-heading">Signing secret</h2>
      <p>Receivers check each call's signature with this secret (Standard Webhooks).</p>
      <p data-testid="secret-shared">
        It belongs to the callback URL <span class="url">{url}</span>: every subscription at that URL, and requests that name it as their callback URL, are signed with it, and rotating it here rotates
        it for all of them.
      </p>
      <div class="actions">
        {secret ? (
          <button type="button" class="secondary" data-testid="hide-secret" onClick={() => setSecret(null)}>
            Hide secret
          </button>
        ) : (
          <ActionButton
            kind="secondary"
            testid="reveal-secret"
            action={action}
            onRun={async () => {
              setSecret(await call(api.GET('/v2/subscriptions/{subscriptionId}/secret', { params: { path: { subscriptionId: id } } })));
              setRotated(false);
            }}
          >
            Reveal secret
          </ActionButton>
        )}
      </div>
      {secret ? (
        <div class="shown-once" role="status" data-testid="signing-secret">
          <p>
            <strong>{rotated ? 'New signing secret' : 'Signing secret'}</strong>
            {rotated ? ' — give it to your receiver now.' : null}
          </p>
          <code class="secret">{secret.secret}</code> <CopyButton text={secret.secret} />
          {secret.previousSecretExpiresAt && Date.parse(secret.previousSecretExpiresAt) > Date.now() ? (
            <p data-testid="previous-secret-until">
              The previous secret also signs until <When at={secret.previousSecretExpiresAt} />.
            </p>
          ) : rotated ? (
            <p data-testid="previous-secret-until">The previous secret no longer signs.</p>
          ) : null}
        </div>
      ) : null}
      <h3>Rotate</h3>
      <div class="row">
        <Select label="The old secret keeps signing" value={overlap} onValue={setOverlap} options={OVERLAPS} error={action.problem?.field('body.overlap')} data-testid="rotate-overlap" />
        <ConfirmButton
          kind="secondary"
          testid="rotate-secret"
          action={action}
          question={
            overlap === '0m'
              ? 'Rotate the secret of this URL now? Calls signed only with the new secret start at once: receivers still on the old one will reject them.'
              : `Rotate the secret of this URL? The old secret keeps signing ${chosen}; switch your receiver to the new one before then.`
          }
          onConfirm={async () => {
            setSecret(await call(api.POST('/v2/subscriptions/{subscriptionId}/secret/rotate', { params: { path: { subscriptionId: id } }, body: { overlap } })));
            setRotated(true);
          }}
        >
          Rotate signing secret
        </ConfirmButton>
      </div>
      <Problem problem={action.problem} unplaced={['body.overlap']} />
    </section>
  );
}
