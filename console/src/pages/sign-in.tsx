import { useState } from 'preact/hooks';
import { api, call, requestToken, requestTokenWithEveryScope, type ApiProblem } from '../api/client';
import { Store, useStore, signIn, signInNotice, session, type Session } from '../session';
import { Field, Loading, Problem, asProblem } from '../ui';

const LINK_GRANT = 'urn:rewards:params:oauth:grant-type:console-link';
const linkState = new Store<{ busy: boolean; problem?: ApiProblem }>({ busy: false });

/**
 * Scopes typed in: POST /v2/oauth/token asks for exactly those. None: the token carries every
 * scope the client holds, in one request whatever they are (v2 would need them named).
 */
function clientToken(clientId: string, clientSecret: string, scopes: string) {
  if (!scopes) return requestTokenWithEveryScope(clientId, clientSecret);
  return requestToken({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret, scope: scopes });
}

/** A token → the session: GET /v2/me tells the account and the scopes. */
async function start(token: string, expiresIn: number, via: Session['via']): Promise<void> {
  const me = await fetch('/v2/me', { headers: { authorization: `Bearer ${token}` } });
  if (!me.ok) throw asProblem(new Error(`GET /v2/me answered ${me.status}`));
  const who = (await me.json()) as { clientId: string; accountId: string; accountName: string; scopes: string[] };
  signIn({ token, expiresAt: Date.now() + expiresIn * 1000, clientId: who.clientId, accountId: who.accountId, accountName: who.accountName, scopes: who.scopes, via });
}

/**
 * A console link `…/console/#link=<code>`: the code is taken out of the address bar at once
 * (history.replaceState) and exchanged once at the token endpoint.
 */
export function consumeLinkFragment(): void {
  const match = /^#link=([^&]+)$/.exec(location.hash);
  if (!match) return;
  const code = decodeURIComponent(match[1]!);
  history.replaceState(null, '', location.pathname + location.search);
  linkState.value = { busy: true };
  requestToken({ grant_type: LINK_GRANT, code })
    .then((answer) => start(answer.access_token, answer.expires_in, 'link'))
    .then(
      () => (linkState.value = { busy: false }),
      (error: unknown) => {
        const problem = asProblem(error);
        linkState.value = { busy: false, problem };
      },
    );
}

export function SignIn() {
  const notice = useStore(signInNotice);
  const link = useStore(linkState);
  const [clientId, setClientId] = useState('');
  const [clientSecret, setClientSecret] = useState('');
  const [scopes, setScopes] = useState('');
  const [showScopes, setShowScopes] = useState(false);
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<ApiProblem | undefined>();

  async function submit(event: Event) {
    event.preventDefault();
    setBusy(true);
    setProblem(undefined);
    try {
      const answer = await clientToken(clientId.trim(), clientSecret, scopes.trim());
      await start(answer.access_token, answer.expires_in, 'client');
    } catch (error) {
      const problem = asProblem(error);
      if (problem.title === 'invalid_scope') setShowScopes(true);
      setProblem(problem);
    } finally {
      setBusy(false);
    }
  }

  return (
    <>
      <header class="topbar">
        <span class="brand">Rewards console</span>
      </header>
      <main id="main" class="sign-in">
        <h1>Sign in</h1>
        {notice ? (
          <p class="notice" role="alert" data-testid="session-expired">
            {notice}
          </p>
        ) : null}
        {link.busy ? <Loading label="Signing in with the console link…" /> : null}
        {link.problem ? (
          <div data-testid="link-problem">
            <Problem problem={link.problem} />
            <p>This console link cannot be used (it is used, expired or unknown). Ask the operator for a new one, or sign in with a client id and secret.</p>
          </div>
        ) : null}
        <form onSubmit={(e) => void submit(e)} data-testid="sign-in-form" aria-describedby="sign-in-help">
          <p id="sign-in-help">Use a client id and secret of your account (or of an operator client).</p>
          <Field label="Client id" value={clientId} onValue={setClientId} autoComplete="username" required data-testid="client-id" />
          <Field label="Client secret" type="password" value={clientSecret} onValue={setClientSecret} autoComplete="current-password" required data-testid="client-secret" />
          {showScopes ? (
            <Field
              label="Scopes"
              hint="Space-separated, e.g. subscriptions:read requests:read. Empty: every scope the client holds."
              value={scopes}
              onValue={setScopes}
              error={problem?.title === 'invalid_scope' ? problem.detail || 'not allowed for this client' : undefined}
              data-testid="scopes"
            />
          ) : null}
          <Problem problem={problem} />
          <button type="submit" disabled={busy || link.busy} data-testid="sign-in">
            {busy ? 'Signing in…' : 'Sign in'}
          </button>
        </form>
      </main>
    </>
  );
}

// A session restored from sessionStorage is checked once: a token that no longer works goes back to sign-in.
if (session.value) void call(api.GET('/v2/me')).catch(() => undefined);
