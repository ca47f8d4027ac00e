// Small shared pieces: loading, problems shown as title + detail, labelled fields with the error
// of the member they edit, copy buttons. Everything from the API is rendered as text.
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
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((n) => n + 1), []);
  return { ...state, reload };
}

export function asProblem(error: unknown): ApiProblem {
  return error instanceof ApiProblem ? error : new ApiProblem(0, 'Something went wrong', error instanceof Error ? error.message : String(error));
}

/** Runs an action, keeping its problem for the form; returns whether it succeeded. */
export function useAction(): { busy: boolean; problem?: ApiProblem; run: (action: () => Promise<void>) => Promise<boolean>; clear: () => void } {
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<ApiProblem | undefined>();
  const run = async (action: () => Promise<void>) => {
    setBusy(true);
    setProblem(undefined);
    try {
      await action();
      return true;
    } catch (error) {
      setProblem(asProblem(error));
      return false;
    } finally {
      setBusy(false);
    }
  };
  return { busy, problem, run, clear: () => setProblem(undefined) };
}

export function Loading({ label = 'Loading…' }: { label?: string }) {
  return (
    <p class="loading" role="status" aria-live="polite" data-testid="loading">
      <span class="spinner" aria-hidden="true" /> {label}
    </p>
  );
}

/** A problem document: its title and detail (field errors are shown by their fields). */
export function Problem({ problem, unplaced }: { problem?: ApiProblem; unplaced?: string[] }) {
  if (!problem) return null;
  const rest = unplaced ? problem.errors.filter((e) => !unplaced.some((p) => e.path === p || e.path.startsWith(`${p}.`))) : problem.errors;
  return (
    <div class="problem" role="alert" data-testid="problem">
      <strong class="problem-title">{problem.title}</strong>
      {problem.detail ? <p class="problem-detail">{problem.detail}</p> : null}
      {unplaced && rest.length ? (
        <ul>
          {rest.map((e) => (
            <li key={e.path}>
              <code>{e.path}</code>: {e.message}
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
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
  const input = (
    <input
      id={id}
      type={(secret ? (shown ? 'text' : 'password') : type) as 'text'}
      value={value}
      onInput={(e) => onValue((e.currentTarget as HTMLInputElement).value)}
      aria-invalid={error ? 'true' : undefined}
      aria-describedby={describedBy}
      {...rest}
    />
  );
  return (
    <div class={error ? 'field field-invalid' : 'field'}>
      <label for={id}>{label}</label>
      {secret ? (
        <div class="secret-input">
          {input}
          <button type="button" class="secondary" aria-pressed={shown} aria-controls={id} onClick={() => setShown(!shown)} data-testid={rest['data-testid'] ? `${rest['data-testid']}-show` : undefined}>
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

export function Select({ label, value, onValue, options, error: judgedError, ...rest }: { label: string; value: string; onValue: (v: string) => void; options: [string, string][]; error?: string; 'data-testid'?: string }) {
  const id = useId('s');
  const error = useErrorUntilEdited(judgedError, value);
  return (
    <div class={error ? 'field field-invalid' : 'field'}>
      <label for={id}>{label}</label>
      <select id={id} value={value} onChange={(e) => onValue((e.currentTarget as HTMLSelectElement).value)} aria-invalid={error ? 'true' : undefined} aria-describedby={error ? `${id}-error` : undefined} {...rest}>
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
      <input id={id} type="checkbox" checked={checked} onChange={(e) => onChecked((e.currentTarget as HTMLInputElement).checked)} {...rest} />
      <label for={id}>{label}</label>
    </div>
  );
}

export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [done, setDone] = useState(false);
  return (
    <button
      type="button"
      class="secondary"
      data-testid="copy"
      onClick={async () => {
        try {
          await navigator.clipboard.writeText(text);
          setDone(true);
          setTimeout(() => setDone(false), 2000);
        } catch {
          setDone(false);
        }
      }}
    >
      {done ? 'Copied' : label}
    </button>
  );
}

/** A secret shown once (signing secret, client secret): text to select plus a copy button. */
export function ShownOnce({ label, value, testid }: { label: string; value: string; testid: string }) {
  return (
    <div class="shown-once" role="status" data-testid={testid}>
      <p>
        <strong>{label}</strong> — shown once; copy it now.
      </p>
      <code class="secret">{value}</code> <CopyButton text={value} />
    </div>
  );
}

export function time(value: string | null | undefined): string {
  if (!value) return '—';
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? value : date.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
}

/** With milliseconds: a request's steps are often within one second. */
export function preciseTime(value: string): string {
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? value : `${date.toLocaleDateString(undefined, { dateStyle: 'medium' })} ${date.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit', fractionalSecondDigits: 3 })}`;
}

export function Badge({ kind, children }: { kind: string; children: ComponentChildren }) {
  return <span class={`badge badge-${kind}`}>{children}</span>;
}

/** A JSON value, pretty-printed. Focusable: a long one scrolls, and keyboard users must reach it. */
export function Json({ value, testid }: { value: unknown; testid?: string }) {
  return (
    <pre class="json" data-testid={testid} tabIndex={0}>
      {JSON.stringify(value, null, 2)}
    </pre>
  );
}

/**
 * A destructive action asks in place (no window.confirm: a dialog blocks the page and browser
 * tests): the first click shows the question with "Yes" (`<testid>-confirm`) and "Cancel".
 */
export function ConfirmButton({ question, onConfirm, disabled, kind = 'danger', testid, children }: { question: string; onConfirm: () => void; disabled?: boolean; kind?: 'danger' | 'secondary'; testid?: string; children: ComponentChildren }) {
  const [asking, setAsking] = useState(false);
  if (!asking)
    return (
      <button type="button" class={kind} data-testid={testid} disabled={disabled} onClick={() => setAsking(true)}>
        {children}
      </button>
    );
  return (
    <span class="confirm" role="group" aria-label={question}>
      <span>{question}</span>{' '}
      <button
        type="button"
        class="danger"
        data-testid={testid ? `${testid}-confirm` : undefined}
        disabled={disabled}
        ref={(el) => el?.focus()}
        onClick={() => {
          setAsking(false);
          onConfirm();
        }}
      >
        Yes
      </button>{' '}
      <button type="button" class="secondary" onClick={() => setAsking(false)}>
        Cancel
      </button>
    </span>
  );
}
