// Small shared pieces: loading, problems shown as title + detail, labelled fields with the error
// of the member they edit, copy buttons. Everything from the API is rendered as text. Actions
// and their buttons: actions.tsx.
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiProblem } from './api/client';

export function useAsync<T>(load: () => Promise<T>, deps: unknown[]): { data?: T; error?: ApiProblem; loading: boolean; reload: () => void } {
  const [state, setState] = useState<{ data?: T; error?: ApiProblem; loading: boolean }>({ loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setState((s) => ({ data: s.data, loading: true }));
    load().then(
      (data) => live && setState({ data, loading: false }),
      (error: unknown) => live && setState({ error: asProblem(error), loading: false }),
    );
    return () => {
      live = false;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps -- `deps` are the caller's, as useEffect's own: they say when `load` reads something new
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((n) => n + 1), []);
  return { ...state, reload };
}

/**
 * Reloads an async value every `everyMs` while `follow` is on and until `done(data)` or `forMs` has
 * passed since it was turned on (a new value of `follow` starts again; `null` or `false` is off):
 * one load at a time, none while the tab is hidden. The one way the console follows something
 * whose outcome comes later (a test send, Retry now, the delivery log).
 */
export function useFollow<T>(
  state: { data?: T; loading: boolean; reload: () => void },
  { everyMs, follow, done = () => false, forMs = Infinity }: { everyMs: number; follow: unknown; done?: (data: T) => boolean; forMs?: number },
): boolean {
  const on = follow !== null && follow !== false && follow !== undefined;
  const { data, loading, reload } = state;
  const [since, setSince] = useState<number | null>(null);
  const [tick, setTick] = useState(0);
  const following = on && since !== null && Date.now() - since < forMs && !(data !== undefined && done(data));
  useEffect(() => setSince(on ? Date.now() : null), [on, follow]);
  // `data`: each load that lands arms the next one; `tick`: a hidden tab looks again later.
  useEffect(() => {
    if (!following || loading) return;
    const timer = setTimeout(() => (document.hidden ? setTick((n) => n + 1) : reload()), everyMs);
    return () => clearTimeout(timer);
  }, [following, loading, data, tick, reload, everyMs]);
  return following;
}

export function asProblem(error: unknown): ApiProblem {
  return error instanceof ApiProblem ? error : new ApiProblem(0, 'Something went wrong', error instanceof Error ? error.message : String(error));
}

export function Loading({ label = 'Loading…' }: { label?: string }) {
  return (
    <p class="loading" role="status" aria-live="polite" data-testid="loading">
      <span class="spinner" aria-hidden="true" /> {label}
    </p>
  );
}

/**
 * A problem document: its title and detail. A form's field errors are shown by their fields
 * (`unplaced` names the paths the form places); then the box says so in words instead of
 * repeating them, and lists only the others, each under the name of the member it is about.
 */
export function Problem({ problem, unplaced }: { problem?: ApiProblem; unplaced?: string[] }) {
  if (!problem) return null;
  const placed = (path: string) => unplaced?.some((p) => path === p || path.startsWith(`${p}.`) || path.startsWith(`${p}[`)) ?? false;
  const rest = problem.errors.filter((e) => !placed(e.path));
  const byField = unplaced !== undefined && problem.errors.length > 0;
  return (
    <div class="problem" role="alert" data-testid="problem">
      <strong class="problem-title">{byField ? (rest.length ? 'Some values were not accepted' : 'Some values were not accepted: see the fields marked in red') : problem.title}</strong>
      {problem.detail && !byField ? <p class="problem-detail">{problem.detail}</p> : null}
      {byField && rest.length ? (
        <ul>
          {rest.map((e) => (
            <li key={e.path}>
              {fieldName(e.path)}: {e.message}
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}

/** `body.callback.url` → "Callback url", `querystring.status` → "Status": the member a message is about, in words. */
function fieldName(path: string): string {
  const words = path
    .replace(/^(body|querystring|params|headers)\.?/, '')
    .replace(/\[(\d+)\]/g, (_, n: string) => ` ${Number(n) + 1}`)
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .replace(/[._]/g, ' ')
    .trim()
    .toLowerCase();
  return words ? words[0]!.toUpperCase() + words.slice(1) : 'The request';
}

let fieldIds = 0;
export function useId(prefix: string): string {
  const ref = useRef<string | undefined>(undefined);
  if (!ref.current) ref.current = `${prefix}-${++fieldIds}`;
  return ref.current;
}

interface InputProps {
  label: string;
  value: string;
  onValue: (value: string) => void;
  error?: string;
  hint?: string;
  type?: 'text' | 'password' | 'url' | 'number' | 'datetime-local';
  'data-testid'?: string;
  required?: boolean;
  autoComplete?: string;
  placeholder?: string;
  maxLength?: number;
  min?: number;
  max?: number;
  /** A credential: typed and shown as dots, with a Show/Hide button beside it. */
  secret?: boolean;
}

/**
 * A field's error stands while the value it judged does: once the user changes the value, the
 * message and the red border go, and the next submit judges the new value.
 */
function useErrorUntilEdited(error: string | undefined, value: string): string | undefined {
  const judged = useRef({ error, value });
  if (judged.current.error !== error) judged.current = { error, value };
  return judged.current.value === value ? error : undefined;
}

export function Field({ label, value, onValue, error: judgedError, hint, type = 'text', secret = false, ...rest }: InputProps) {
  const id = useId('f');
  const error = useErrorUntilEdited(judgedError, value);
  const [shown, setShown] = useState(false);
  const describedBy = [hint ? `${id}-hint` : '', error ? `${id}-error` : ''].filter(Boolean).join(' ') || undefined;
  // Preact types an input's attributes as a union keyed by `type`: a value that may be any of
  // several types picks none of them, so it is typed as one.
  const inputType = (secret ? (shown ? 'text' : 'password') : type) as 'text';
  const input = <input id={id} type={inputType} value={value} onInput={(e) => onValue(e.currentTarget.value)} aria-invalid={error ? 'true' : undefined} aria-describedby={describedBy} {...rest} />;
  return (
    <div class={error ? 'field field-invalid' : 'field'}>
      <label for={id}>{label}</label>
      {secret ? (
        <div class="secret-input">
          {input}
          <button
            type="button"
            class="secondary"
            aria-pressed={shown}
            aria-controls={id}
            onClick={() => setShown(!shown)}
            data-testid={rest['data-testid'] ? `${rest['data-testid']}-show` : undefined}
          >
            {shown ? 'Hide' : 'Show'}
            <span class="sr-only"> {label}</span>
          </button>
        </div>
      ) : (
        input
      )}
      {hint ? (
        <small id={`${id}-hint`} class="hint">
          {hint}
        </small>
      ) : null}
      <FieldError id={id} error={error} />
    </div>
  );
}

/** The problem's message for one field, tied to it by `aria-describedby` (`<id>-error`). */
function FieldError({ id, error }: { id: string; error?: string | undefined }) {
  return error ? (
    <small id={`${id}-error`} class="field-error" data-testid="field-error">
      {error}
    </small>
  ) : null;
}

export function Select({
  label,
  value,
  onValue,
  options,
  error: judgedError,
  ...rest
}: {
  label: string;
  value: string;
  onValue: (v: string) => void;
  options: [string, string][];
  error?: string;
  'data-testid'?: string;
}) {
  const id = useId('s');
  const error = useErrorUntilEdited(judgedError, value);
  return (
    <div class={error ? 'field field-invalid' : 'field'}>
      <label for={id}>{label}</label>
      <select id={id} value={value} onChange={(e) => onValue(e.currentTarget.value)} aria-invalid={error ? 'true' : undefined} aria-describedby={error ? `${id}-error` : undefined} {...rest}>
        {options.map(([v, text]) => (
          <option key={v} value={v}>
            {text}
          </option>
        ))}
      </select>
      <FieldError id={id} error={error} />
    </div>
  );
}

export function Checkbox({ label, checked, onChecked, ...rest }: { label: string; checked: boolean; onChecked: (v: boolean) => void; 'data-testid'?: string }) {
  const id = useId('c');
  return (
    <div class="field field-check">
      <input id={id} type="checkbox" checked={checked} onChange={(e) => onChecked(e.currentTarget.checked)} {...rest} />
      <label for={id}>{label}</label>
    </div>
  );
}

export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [done, setDone] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setDone(true);
      setTimeout(() => setDone(false), 2000);
    } catch {
      setDone(false);
    }
  };
  return (
    <button type="button" class="secondary" data-testid="copy" onClick={() => void copy()}>
      {done ? 'Copied' : label}
    </button>
  );
}

/**
 * A new secret: text to select plus a copy button, and whether it can be seen again (a client
 * secret is stored hashed: never; a signing secret: on its subscription's page).
 */
export function ShownOnce({ label, value, testid, note = 'shown once; copy it now.' }: { label: string; value: string; testid: string; note?: string }) {
  return (
    <div class="shown-once" role="status" data-testid={testid}>
      <p>
        <strong>{label}</strong> — {note}
      </p>
      <code class="secret">{value}</code> <CopyButton text={value} />
    </div>
  );
}

const UNITS: [Intl.RelativeTimeFormatUnit, number][] = [
  ['year', 365 * 86_400_000],
  ['month', 30 * 86_400_000],
  ['day', 86_400_000],
  ['hour', 3_600_000],
  ['minute', 60_000],
  ['second', 1000],
];
const relativeFormat = new Intl.RelativeTimeFormat('en', { numeric: 'auto' });

/** "3 minutes ago", "in 2 hours": how far a moment is from now, in its largest whole unit. */
function relativeTime(at: number, now = Date.now()): string {
  const delta = at - now;
  if (Math.abs(delta) < 10_000) return delta > 0 ? 'in a few seconds' : 'just now';
  const [unit, size] = UNITS.find(([, ms]) => Math.abs(delta) >= ms) ?? UNITS[UNITS.length - 1]!;
  return relativeFormat.format(Math.trunc(delta / size), unit);
}

/** The exact moment in UTC, the zone of payloads, receivers' logs and the API: `2026-11-27 04:05:06 UTC`. */
function utc(value: string, { ms = false }: { ms?: boolean } = {}): string {
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) return value;
  return `${date
    .toISOString()
    .slice(0, ms ? 23 : 19)
    .replace('T', ' ')} UTC`;
}

/**
 * A moment as people read it: how long ago (or how soon), with the exact UTC time beside it, so
 * it can be matched with a payload or a receiver's log. `ms` for a request's steps, which are often
 * within one second.
 */
export function When({ at, ms = false, compact = false }: { at: string | null | undefined; ms?: boolean; compact?: boolean }) {
  if (!at) return <>—</>;
  const date = new Date(at);
  if (Number.isNaN(date.getTime())) return <>{at}</>;
  // In a one-line row (the delivery log): how long ago, the exact UTC time in its tooltip and read out.
  if (compact)
    return (
      <time dateTime={date.toISOString()} class="when" title={utc(at, { ms })}>
        {relativeTime(date.getTime())}
        <span class="sr-only"> ({utc(at, { ms })})</span>
      </time>
    );
  return (
    <time dateTime={date.toISOString()} class="when">
      {relativeTime(date.getTime())} <span class="utc">{utc(at, { ms })}</span>
    </time>
  );
}

/** The same as text, for a label that must be one string (a badge). */
export function whenText(at: string): string {
  const date = new Date(at);
  return Number.isNaN(date.getTime()) ? at : `${relativeTime(date.getTime())} (${utc(at)})`;
}

/**
 * A `datetime-local` input's value read as UTC (the console's inputs all say "UTC"), as RFC 3339;
 * empty stays empty.
 */
export function utcInputToIso(value: string): string {
  if (!value) return '';
  const date = new Date(`${value.length === 16 ? `${value}:00` : value}Z`);
  return Number.isNaN(date.getTime()) ? value : date.toISOString();
}

export function Badge({ kind, children, testid }: { kind: string; children: ComponentChildren; testid?: string }) {
  return (
    <span class={`badge badge-${kind}`} data-testid={testid}>
      {children}
    </span>
  );
}

/** A JSON value, pretty-printed. Focusable: a long one scrolls, and keyboard users must reach it. */
export function Json({ value, testid }: { value: unknown; testid?: string }) {
  return (
    <pre class="json" data-testid={testid} tabIndex={0}>
      {JSON.stringify(value, null, 2)}
    </pre>
  );
}
