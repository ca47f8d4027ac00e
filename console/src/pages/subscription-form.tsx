import { useState } from 'preact/hooks';
import type { Subscription, SubscriptionBody, SubscriptionEvent } from '../api/client';
import { ActionForm, type Action } from '../actions';
import { Checkbox, Field, Problem, Select } from '../ui';

type AuthType = 'none' | 'Bearer' | 'Basic' | 'oauth2' | 'mtls' | 'mtls-oauth2';

interface OAuth2Form {
  client_id: string;
  client_secret: string;
  url: string;
  audience: string;
}

export interface FormState {
  event: string;
  description: string;
  active: boolean;
  experiences: string;
  url: string;
  authType: AuthType;
  bearer: string;
  basicUser: string;
  basicPassword: string;
  /** The masked Basic credential of the stored subscription: sent back as is unless retyped. */
  basicMasked: string;
  oauth2: OAuth2Form;
  headers: [string, string][];
  rateLimit: string;
}

const emptyOAuth2: OAuth2Form = { client_id: '', client_secret: '', url: '', audience: '' };

export function formOf(s?: Subscription): FormState {
  const auth = (s?.callback.authorization ?? {}) as Record<string, unknown>;
  const oauth = (auth.oauth2 ?? (auth.mtls as { twoFactor?: { oauth2?: unknown } } | undefined)?.twoFactor?.oauth2) as Partial<OAuth2Form> | undefined;
  const authType: AuthType = auth.Bearer ? 'Bearer' : auth.Basic ? 'Basic' : auth.oauth2 ? 'oauth2' : auth.mtls ? (oauth ? 'mtls-oauth2' : 'mtls') : 'none';
  return {
    event: s?.event ?? ('registered-request' satisfies SubscriptionEvent),
    description: s?.description ?? '',
    active: s?.active ?? true,
    experiences: (s?.experiences ?? []).join(', '),
    url: s?.callback.url ?? '',
    authType,
    bearer: typeof auth.Bearer === 'string' ? auth.Bearer : '',
    basicUser: '',
    basicPassword: '',
    basicMasked: typeof auth.Basic === 'string' ? auth.Basic : '',
    oauth2: { ...emptyOAuth2, ...(oauth ?? {}), audience: oauth?.audience ?? '' },
    headers: Object.entries(s?.callback.customHeaders ?? {}),
    rateLimit: s?.rateLimit ? String(s.rateLimit) : '',
  };
}

function base64(text: string): string {
  return btoa(String.fromCharCode(...new TextEncoder().encode(text)));
}

/** The request body: masked secrets (`****abcd`) are sent back unchanged, and the API keeps them. */
export function bodyOf(form: FormState, creating: boolean): SubscriptionBody {
  const oauth2 = () => ({
    client_id: form.oauth2.client_id,
    client_secret: form.oauth2.client_secret,
    url: form.oauth2.url,
    ...(form.oauth2.audience ? { audience: form.oauth2.audience } : {}),
  });
  let authorization: NonNullable<SubscriptionBody['callback']>['authorization'] | undefined;
  switch (form.authType) {
    case 'Bearer':
      authorization = { Bearer: form.bearer };
      break;
    case 'Basic':
      authorization = { Basic: form.basicUser || form.basicPassword || !form.basicMasked ? base64(`${form.basicUser}:${form.basicPassword}`) : form.basicMasked };
      break;
    case 'oauth2':
      authorization = { oauth2: oauth2() };
      break;
    case 'mtls':
      authorization = { mtls: {} };
      break;
    case 'mtls-oauth2':
      authorization = { mtls: { twoFactor: { oauth2: oauth2() } } };
      break;
  }
  const headers = Object.fromEntries(form.headers.filter(([name]) => name.trim() !== '').map(([name, value]) => [name.trim(), value]));
  // An operational event takes no experiences (the field is hidden for it).
  const experiences = OPERATIONAL_EVENTS.has(form.event)
    ? []
    : form.experiences
        .split(/[,\n]/)
        .map((e) => e.trim())
        .filter(Boolean);
  const rate = form.rateLimit.trim() === '' ? null : Number(form.rateLimit);
  return {
    event: form.event,
    description: form.description,
    active: form.active,
    experiences,
    callback: { url: form.url.trim(), ...(authorization ? { authorization } : {}), customHeaders: headers },
    ...(rate === null ? (creating ? {} : { rateLimit: null }) : { rateLimit: rate }),
  };
}

/**
 * The events a subscription binds, one per event the API knows (a missing or unknown one is a type
 * error). Operational ones tell about the account's own deliveries, not about requests
 * (docs/subscriptions.md, "Events").
 */
const EVENTS: Record<SubscriptionEvent, { label: string; operational: boolean }> = {
  'registered-request': { label: 'registered-request (registered or rejected)', operational: false },
  'processed-request': { label: 'processed-request (delivered and canceled prizes)', operational: false },
  'failed-notification': { label: 'failed-notification (operational: a notification failed after its last attempt)', operational: true },
  'disabled-subscription': { label: 'disabled-subscription (operational: a subscription was switched off)', operational: true },
  'endpoint-circuit': { label: "endpoint-circuit (operational: an endpoint's circuit breaker opened or closed)", operational: true },
};
const EVENT_OPTIONS = Object.entries(EVENTS).map(([event, { label }]): [string, string] => [event, label]);
const OPERATIONAL_EVENTS: ReadonlySet<string> = new Set(Object.entries(EVENTS).flatMap(([event, { operational }]) => (operational ? [event] : [])));

const PLACED = ['body.event', 'body.description', 'body.active', 'body.experiences', 'body.callback.url', 'body.callback.authorization', 'body.callback.customHeaders', 'body.rateLimit'];

export function SubscriptionForm({ initial, action, onSubmit, submitLabel }: { initial: FormState; action: Action; onSubmit: (form: FormState) => Promise<void>; submitLabel: string }) {
  const { busy, problem } = action;
  const [form, setForm] = useState(initial);
  const set = <K extends keyof FormState>(key: K, value: FormState[K]) => setForm((f) => ({ ...f, [key]: value }));
  const setOAuth = (key: keyof OAuth2Form, value: string) => setForm((f) => ({ ...f, oauth2: { ...f.oauth2, [key]: value } }));
  const err = (path: string) => problem?.field(path);
  const oauthBase = form.authType === 'mtls-oauth2' ? 'body.callback.authorization.mtls.twoFactor.oauth2' : 'body.callback.authorization.oauth2';
  const masked = (v: string) => v.startsWith('****');
  return (
    <ActionForm action={action} testid="subscription-form" onRun={() => onSubmit(form)}>
      <Select label="Event" value={form.event} onValue={(v) => set('event', v)} options={EVENT_OPTIONS} error={err('body.event')} data-testid="sub-event" />
      {OPERATIONAL_EVENTS.has(form.event) ? (
        <p class="hint" data-testid="sub-event-operational">
          An operational event tells you about your own deliveries, not about requests: its body names the notification or subscription concerned, so you can retry, recover or switch it back on. It
          takes no experiences.
        </p>
      ) : null}
      <Field
        label="Callback URL"
        type="url"
        value={form.url}
        onValue={(v) => set('url', v)}
        error={err('body.callback.url')}
        required
        data-testid="sub-url"
        placeholder="https://example.com/webhooks"
      />
      <Field label="Description" value={form.description} onValue={(v) => set('description', v)} error={err('body.description')} maxLength={500} data-testid="sub-description" />
      {OPERATIONAL_EVENTS.has(form.event) ? null : (
        <Field
          label="Experiences"
          hint="Comma-separated experience names; empty = every experience."
          value={form.experiences}
          onValue={(v) => set('experiences', v)}
          error={err('body.experiences')}
          data-testid="sub-experiences"
        />
      )}
      <Field
        label="Rate limit (deliveries per second)"
        hint="1–10,000; empty = no limit."
        type="number"
        min={1}
        max={10000}
        value={form.rateLimit}
        onValue={(v) => set('rateLimit', v)}
        error={err('body.rateLimit')}
        data-testid="sub-rate-limit"
      />
      <Checkbox label="Active" checked={form.active} onChecked={(v) => set('active', v)} data-testid="sub-active" />

      <fieldset>
        <legend>Authorization</legend>
        <Select
          label="Method"
          value={form.authType}
          onValue={(v) => set('authType', v as AuthType)}
          options={[
            ['none', 'None'],
            ['Bearer', 'Bearer token'],
            ['Basic', 'Basic (user and password)'],
            ['oauth2', 'OAuth2 client credentials'],
            ['mtls', 'mTLS'],
            ['mtls-oauth2', 'mTLS + OAuth2'],
          ]}
          error={form.authType === 'none' ? err('body.callback.authorization') : undefined}
          data-testid="sub-auth-type"
        />
        {form.authType === 'Bearer' ? (
          <Field
            label="Bearer token"
            secret
            value={form.bearer}
            onValue={(v) => set('bearer', v)}
            error={err('body.callback.authorization')}
            hint={masked(form.bearer) ? 'Masked: the stored token is kept unless you type a new one.' : undefined}
            autoComplete="off"
            data-testid="sub-bearer"
          />
        ) : null}
        {form.authType === 'Basic' ? (
          <>
            <Field
              label="User"
              value={form.basicUser}
              onValue={(v) => set('basicUser', v)}
              autoComplete="off"
              hint={form.basicMasked ? `Stored: ${form.basicMasked}. Leave user and password empty to keep it.` : undefined}
              data-testid="sub-basic-user"
            />
            <Field
              label="Password"
              secret
              value={form.basicPassword}
              onValue={(v) => set('basicPassword', v)}
              autoComplete="new-password"
              error={err('body.callback.authorization')}
              data-testid="sub-basic-password"
            />
          </>
        ) : null}
        {form.authType === 'mtls' || form.authType === 'mtls-oauth2' ? <p class="hint">Mutual TLS with the service's client certificate (MTLS_CERT_FILE / MTLS_KEY_FILE on the server).</p> : null}
        {form.authType === 'oauth2' || form.authType === 'mtls-oauth2' ? (
          <>
            <Field label="OAuth2 token URL" type="url" value={form.oauth2.url} onValue={(v) => setOAuth('url', v)} error={err(`${oauthBase}.url`)} data-testid="sub-oauth-url" />
            <Field
              label="OAuth2 client id"
              value={form.oauth2.client_id}
              onValue={(v) => setOAuth('client_id', v)}
              error={err(`${oauthBase}.client_id`)}
              autoComplete="off"
              data-testid="sub-oauth-client-id"
            />
            <Field
              label="OAuth2 client secret"
              secret
              value={form.oauth2.client_secret}
              onValue={(v) => setOAuth('client_secret', v)}
              error={err(`${oauthBase}.client_secret`)}
              hint={masked(form.oauth2.client_secret) ? 'Masked: the stored secret is kept unless you type a new one.' : undefined}
              autoComplete="off"
              data-testid="sub-oauth-client-secret"
            />
            <Field label="OAuth2 audience (optional)" value={form.oauth2.audience} onValue={(v) => setOAuth('audience', v)} error={err(`${oauthBase}.audience`)} data-testid="sub-oauth-audience" />
          </>
        ) : null}
      </fieldset>

      <fieldset data-testid="sub-headers">
        <legend>Custom headers</legend>
        {form.headers.map(([name, value], i) => (
          <div class="row" key={i}>
            <Field
              label={`Header ${i + 1} name`}
              value={name}
              onValue={(v) =>
                set(
                  'headers',
                  form.headers.map((h, j) => (j === i ? [v, h[1]] : h)),
                )
              }
              error={name ? err(`body.callback.customHeaders.${name}`) : undefined}
            />
            <Field
              label={`Header ${i + 1} value`}
              value={value}
              onValue={(v) =>
                set(
                  'headers',
                  form.headers.map((h, j) => (j === i ? [h[0], v] : h)),
                )
              }
            />
            <button
              type="button"
              class="secondary"
              onClick={() =>
                set(
                  'headers',
                  form.headers.filter((_, j) => j !== i),
                )
              }
            >
              Remove header {i + 1}
            </button>
          </div>
        ))}
        {err('body.callback.customHeaders') && !form.headers.some(([n]) => n && err(`body.callback.customHeaders.${n}`)) ? (
          <small class="field-error">{err('body.callback.customHeaders')}</small>
        ) : null}
        <button type="button" class="secondary" data-testid="add-header" onClick={() => set('headers', [...form.headers, ['', '']])}>
          Add header
        </button>
      </fieldset>
      <Problem problem={problem} unplaced={PLACED} />
      <button type="submit" disabled={busy} data-testid="sub-save">
        {busy ? 'Saving…' : submitLabel}
      </button>
    </ActionForm>
  );
}
