// What a click does to the API. An action disables its button while it runs and keeps its problem
// for the page to show with `<Problem problem={action.problem} />` where it belongs (beside the
// form, above the table the button sits in). A page holds one `useAction` per thing it does and
// wires it to an `ActionForm`, an `ActionButton`, or a `ConfirmButton` when it destroys or cuts
// something off.
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import type { ApiProblem } from './api/client';
import { asProblem } from './ui';

/** An action's state (running; the problem of its last run) and the way to run it. */
export interface Action {
  busy: boolean;
  problem?: ApiProblem;
  /** Runs `action`, keeping its problem for the page; resolves to whether it succeeded. */
  run: (action: () => Promise<void>) => Promise<boolean>;
}

/** Runs an action, keeping its problem for the form; returns whether it succeeded. */
export function useAction(): Action {
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
  return { busy, problem, run };
}

/** A form whose submit runs `onRun` as `action` (the page's own submit button, disabled while `action.busy`). */
export function ActionForm({ action, onRun, inline = false, testid, children }: { action: Action; onRun: () => Promise<void>; inline?: boolean; testid?: string; children: ComponentChildren }) {
  return (
    <form
      class={inline ? 'form inline' : 'form'}
      data-testid={testid}
      onSubmit={(e) => {
        e.preventDefault();
        void action.run(onRun);
      }}
    >
      {children}
    </form>
  );
}

/** A button that runs `onRun` as `action`: disabled while it runs (or while `disabled`). */
export function ActionButton({
  action,
  onRun,
  disabled = false,
  kind,
  testid,
  children,
}: {
  action: Action;
  onRun: () => Promise<void>;
  disabled?: boolean;
  kind?: 'secondary';
  testid?: string;
  children: ComponentChildren;
}) {
  return (
    <button type="button" class={kind} data-testid={testid} disabled={action.busy || disabled} onClick={() => void action.run(onRun)}>
      {children}
    </button>
  );
}

/**
 * A destructive action asks in place (no window.confirm: a dialog blocks the page and browser
 * tests): the first click shows the question with "Yes" (`<testid>-confirm`), which runs
 * `onConfirm` as `action`, and "Cancel".
 */
export function ConfirmButton({
  question,
  action,
  onConfirm,
  kind = 'danger',
  testid,
  children,
}: {
  question: string;
  action: Action;
  onConfirm: () => Promise<void>;
  kind?: 'danger' | 'secondary';
  testid?: string;
  children: ComponentChildren;
}) {
  const [asking, setAsking] = useState(false);
  if (!asking)
    return (
      <button type="button" class={kind} data-testid={testid} disabled={action.busy} onClick={() => setAsking(true)}>
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
        disabled={action.busy}
        ref={(el) => el?.focus()}
        onClick={() => {
          setAsking(false);
          void action.run(onConfirm);
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
