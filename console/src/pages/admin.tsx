import { useState } from 'preact/hooks';
import { api, asPage, call, type Account, type ConsoleLinkState, type OAuthClient } from '../api/client';
import { actFor } from '../session';
import { href, navigate, route } from '../router';
import { ActionButton, ActionForm, ConfirmButton, useAction } from '../actions';
import { Badge, Checkbox, CopyButton, Field, Loading, Problem, ShownOnce, When, whenText, useAsync } from '../ui';

/** Each scope a client can hold, and what it lets the client do. `admin` only for the operator's own account. */
const SCOPES: [string, string][] = [
  ['subscriptions:read', 'see subscriptions and the delivery log'],
  ['subscriptions:write', 'create, change and retry them'],
  ['requests:read', 'look up reward requests'],
  ['requests:write', 'send reward requests'],
  ['events:read', "read a request's events"],
  ['events:write', 'post partner events'],
  ['admin', 'operate the service: every account, client and experience'],
];

/** GET /v2/admin/accounts?limit=50&cursor=, POST /v2/admin/accounts. */
export function Accounts() {
  const cursor = route.value.query.get('cursor') ?? '';
  const list = useAsync(async () => asPage<Account>(await call(api.GET('/v2/admin/accounts', { params: { query: { limit: 50, ...(cursor ? { cursor } : {}) } } }))), [cursor]);
  const create = useAction();
  const [name, setName] = useState('');
  return (
    <section>
      <h1>Accounts</h1>
      <ActionForm
        action={create}
        inline
        testid="create-account"
        onRun={async () => {
          await call(api.POST('/v2/admin/accounts', { body: { name } }));
          setName('');
          list.reload();
        }}
      >
        <Field label="New account name" value={name} onValue={setName} required maxLength={200} error={create.problem?.field('body.name')} data-testid="account-name" />
        <button type="submit" disabled={create.busy}>
          Create account
        </button>
      </ActionForm>
      <Problem problem={create.problem} unplaced={['body.name']} />
      {list.loading ? <Loading label="Loading accounts…" /> : null}
      <Problem problem={list.error} />
      {list.data ? (
        <table data-testid="account-table">
          <caption class="sr-only">Accounts</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Id</th>
              <th scope="col">State</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {list.data.data.map((a) => (
              <tr key={a.id} data-testid="account-row">
                <td>
                  <a href={href(`/admin/accounts/${encodeURIComponent(a.id)}`)}>{a.name}</a> {a.isOperator ? <Badge kind="test">operator</Badge> : null}
                </td>
                <td>
                  <code>{a.id}</code>
                </td>
                <td>{a.active ? <Badge kind="ok">active</Badge> : <Badge kind="off">inactive</Badge>}</td>
                <td>
                  <When at={a.createdAt} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      <nav aria-label="Pages" class="pager">
        {cursor ? <a href={href('/admin/accounts')}>First page</a> : null}
        {list.data?.nextCursor ? (
          <a href={href('/admin/accounts', { cursor: list.data.nextCursor })} data-testid="next-page">
            Next page
          </a>
        ) : null}
      </nav>
    </section>
  );
}

/** An account: activate/deactivate (PATCH), its OAuth clients, console links. */
export function AccountPage({ id }: { id: string }) {
  const path = { id };
  const account = useAsync(() => call(api.GET('/v2/admin/accounts/{id}', { params: { path } })), [id]);
  const toggle = useAction();
  if (account.loading && !account.data) return <Loading label="Loading the account…" />;
  if (!account.data)
    return (
      <section>
        <h1>Account</h1>
        <Problem problem={account.error} />
      </section>
    );
  const a = account.data;
  return (
    <section data-testid="account-page">
      <p class="crumbs">
        <a href={href('/admin/accounts')}>Accounts</a> /
      </p>
      <div class="title-row">
        <h1>{a.name}</h1>
        {a.active ? <Badge kind="ok">active</Badge> : <Badge kind="off">inactive</Badge>}
      </div>
      <p>
        <code>{a.id}</code> · created <When at={a.createdAt} />
      </p>
      <div class="actions">
        {!a.isOperator ? (
          <ConfirmButton
            testid="toggle-account"
            kind={a.active ? 'danger' : 'secondary'}
            question={a.active ? `Deactivate ${a.name}? Its clients and console sessions are cut off within seconds.` : `Activate ${a.name}?`}
            action={toggle}
            onConfirm={async () => {
              await call(api.PATCH('/v2/admin/accounts/{id}', { params: { path }, body: { active: !a.active } }));
              account.reload();
            }}
          >
            {a.active ? 'Deactivate' : 'Activate'}
          </ConfirmButton>
        ) : null}
        <button
          type="button"
          class="secondary"
          data-testid="act-for-account"
          onClick={() => {
            actFor(a.isOperator ? null : a.id);
            navigate(href('/'));
          }}
        >
          Open this account's console
        </button>
      </div>
      <Problem problem={toggle.problem} />
      <Clients accountId={id} operator={a.isOperator} />
      {!a.isOperator ? <ConsoleLink accountId={id} /> : null}
    </section>
  );
}

function Clients({ accountId, operator }: { accountId: string; operator: boolean }) {
  const path = { id: accountId };
  const list = useAsync(async () => asPage<OAuthClient>(await call(api.GET('/v2/admin/accounts/{id}/clients', { params: { path, query: { limit: 100 } } }))), [accountId]);
  const create = useAction();
  const act = useAction();
  const [scopes, setScopes] = useState<string[]>(SCOPES.map(([scope]) => scope).filter((s) => s !== 'admin'));
  const [secret, setSecret] = useState<{ clientId: string; secret: string; label: string } | null>(null);
  return (
    <section aria-labelledby="clients-heading">
      <h2 id="clients-heading">OAuth clients</h2>
      {secret ? <ShownOnce label={`${secret.label} for ${secret.clientId}`} value={secret.secret} testid="client-secret-once" /> : null}
      {list.loading ? <Loading label="Loading clients…" /> : null}
      <Problem problem={list.error} />
      <Problem problem={act.problem} />
      {list.data && list.data.data.length ? (
        <table data-testid="client-table">
          <caption class="sr-only">OAuth clients of the account</caption>
          <thead>
            <tr>
              <th scope="col">Client id</th>
              <th scope="col">Scopes</th>
              <th scope="col">State</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {list.data.data.map((c) => {
              const clientPath = { id: accountId, clientId: c.client_id };
              return (
                <tr key={c.client_id} data-testid="client-row">
                  <td>
                    <code>{c.client_id}</code>
                  </td>
                  <td>{c.scopes}</td>
                  <td>{c.active ? <Badge kind="ok">active</Badge> : <Badge kind="off">inactive</Badge>}</td>
                  <td class="actions">
                    <ConfirmButton
                      kind="secondary"
                      testid="rotate-client-secret"
                      question={`Rotate the secret of ${c.client_id}?`}
                      action={act}
                      onConfirm={async () => {
                        const rotated = await call(api.POST('/v2/admin/accounts/{id}/clients/{clientId}/rotate-secret', { params: { path: clientPath } }));
                        setSecret({ clientId: rotated.client_id, secret: rotated.client_secret, label: 'New client secret' });
                        list.reload();
                      }}
                    >
                      Rotate secret<span class="sr-only"> of {c.client_id}</span>
                    </ConfirmButton>
                    <ActionButton
                      kind="secondary"
                      action={act}
                      onRun={async () => {
                        await call(api.PATCH('/v2/admin/accounts/{id}/clients/{clientId}', { params: { path: clientPath }, body: { active: !c.active } }));
                        list.reload();
                      }}
                    >
                      {c.active ? 'Deactivate' : 'Activate'}
                      <span class="sr-only"> {c.client_id}</span>
                    </ActionButton>
                    <ConfirmButton
                      testid="delete-client"
                      question={`Delete ${c.client_id}?`}
                      action={act}
                      onConfirm={async () => {
                        await call(api.DELETE('/v2/admin/accounts/{id}/clients/{clientId}', { params: { path: clientPath } }));
                        list.reload();
                      }}
                    >
                      Delete<span class="sr-only"> {c.client_id}</span>
                    </ConfirmButton>
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      ) : list.data ? (
        <p>No clients.</p>
      ) : null}
      <ActionForm
        action={create}
        testid="create-client"
        onRun={async () => {
          const created = await call(api.POST('/v2/admin/accounts/{id}/clients', { params: { path }, body: { scopes } }));
          setSecret({ clientId: created.client_id, secret: created.client_secret, label: 'Client secret' });
          list.reload();
        }}
      >
        <fieldset>
          <legend>New client's scopes</legend>
          {SCOPES.filter(([scope]) => operator || scope !== 'admin').map(([scope, words]) => (
            <Checkbox
              key={scope}
              label={`${scope} — ${words}`}
              checked={scopes.includes(scope)}
              onChecked={(on) => setScopes(on ? [...scopes, scope] : scopes.filter((s) => s !== scope))}
              data-testid={`scope-${scope}`}
            />
          ))}
          {create.problem?.field('body.scopes') ? <small class="field-error">{create.problem.field('body.scopes')}</small> : null}
        </fieldset>
        <Problem problem={create.problem} unplaced={['body.scopes']} />
        <button type="submit" disabled={create.busy}>
          Create client
        </button>
      </ActionForm>
    </section>
  );
}

/** POST /v2/admin/accounts/{id}/console-links {ttl} → {id, url, expiresAt, tokenTtlSeconds}; the account's links, each revocable. */
function ConsoleLink({ accountId }: { accountId: string }) {
  const action = useAction();
  const [ttl, setTtl] = useState('1h');
  const [link, setLink] = useState<{ url: string; expiresAt: string; tokenTtlSeconds: number } | null>(null);
  const [made, setMade] = useState(0);
  return (
    <section aria-labelledby="link-heading">
      <h2 id="link-heading">Console link</h2>
      <p>A one-time link that signs a developer of this account in to the console (usable for 10 minutes, once). Hand it over a channel you trust.</p>
      <ActionForm
        action={action}
        inline
        testid="console-link-form"
        onRun={async () => {
          setLink(await call(api.POST('/v2/admin/accounts/{id}/console-links', { params: { path: { id: accountId } }, body: { ttl } })));
          setMade(made + 1);
        }}
      >
        <Field label="Session length" hint="30m, 1h … 24h" value={ttl} onValue={setTtl} error={action.problem?.field('body.ttl')} data-testid="link-ttl" />
        <button type="submit" disabled={action.busy} data-testid="make-link">
          Make a console link
        </button>
      </ActionForm>
      <Problem problem={action.problem} unplaced={['body.ttl']} />
      {link ? (
        <div class="shown-once" role="status" data-testid="console-link">
          <p>
            Usable once until <When at={link.expiresAt} />; the session lasts {Math.round(link.tokenTtlSeconds / 60)} minutes.
          </p>
          <code class="secret">{link.url}</code> <CopyButton text={link.url} label="Copy link" />
        </div>
      ) : null}
      <ConsoleLinks accountId={accountId} reloadKey={made} />
    </section>
  );
}

/** What a link is now: its code unused, its session open, or over. */
function linkState(l: ConsoleLinkState, now: number): { label: string; kind: 'ok' | 'off'; open: boolean } {
  if (l.revokedAt) return { label: `revoked ${whenText(l.revokedAt)}`, kind: 'off', open: false };
  if (l.sessionExpiresAt)
    return Date.parse(l.sessionExpiresAt) > now ? { label: `session open until ${whenText(l.sessionExpiresAt)}`, kind: 'ok', open: true } : { label: 'session ended', kind: 'off', open: false };
  return Date.parse(l.expiresAt) > now ? { label: `unused until ${whenText(l.expiresAt)}`, kind: 'ok', open: true } : { label: 'expired unused', kind: 'off', open: false };
}

/** GET /v2/admin/accounts/{id}/console-links; DELETE …/console-links/{linkId} revokes a link and the session it opened. */
function ConsoleLinks({ accountId, reloadKey }: { accountId: string; reloadKey: number }) {
  const list = useAsync(
    async () => asPage<ConsoleLinkState>(await call(api.GET('/v2/admin/accounts/{id}/console-links', { params: { path: { id: accountId }, query: { limit: 50 } } }))),
    [accountId, reloadKey],
  );
  const revoke = useAction();
  const now = Date.now();
  if (list.loading && !list.data) return <Loading label="Loading console links…" />;
  if (list.error) return <Problem problem={list.error} />;
  if (!list.data || list.data.data.length === 0) return null;
  return (
    <>
      <Problem problem={revoke.problem} />
      <table data-testid="console-link-table">
        <caption class="sr-only">Console links of the account</caption>
        <thead>
          <tr>
            <th scope="col">Made</th>
            <th scope="col">State</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {list.data.data.map((l) => {
            const state = linkState(l, now);
            return (
              <tr key={l.id} data-testid="console-link-row">
                <td>
                  <When at={l.createdAt} /> <code>{l.id}</code>
                </td>
                <td>
                  <Badge kind={state.kind}>{state.label}</Badge>
                </td>
                <td class="actions">
                  {state.open ? (
                    <ConfirmButton
                      testid="revoke-console-link"
                      question={`Revoke ${l.id}? Its session is cut off within seconds.`}
                      action={revoke}
                      onConfirm={async () => {
                        await call(api.DELETE('/v2/admin/accounts/{id}/console-links/{linkId}', { params: { path: { id: accountId, linkId: l.id } } }));
                        list.reload();
                      }}
                    >
                      Revoke<span class="sr-only"> {l.id}</span>
                    </ConfirmButton>
                  ) : null}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </>
  );
}
