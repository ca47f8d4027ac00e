// The list pages' filters and paging (deliveries, requests): one way to read filters from the URL,
// edit them, apply them, and page with the API's `nextCursor`.
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { href, navigate, route } from './router';
import { utcInputToIso } from './ui';

/** Filters holding a moment: RFC 3339 in the URL and the API, a UTC `datetime-local` value in the form. */
const MOMENTS = new Set(['since', 'until']);

/**
 * A list page's filters, read from the URL (so a filtered list can be shared and reloaded), edited
 * in a draft, applied by navigating to the URL they make. `deps` changes when the list must load again.
 */
export function useListFilters<N extends string>(path: string, names: readonly N[]) {
  const query = route.value.query;
  const filters = Object.fromEntries(names.map((name) => [name, query.get(name) ?? ''])) as Record<N, string>;
  const cursor = query.get('cursor') ?? '';
  const [draft, setDraft] = useState(() => Object.fromEntries(names.map((name) => [name, MOMENTS.has(name) ? filters[name].slice(0, 16) : filters[name]])) as Record<N, string>);
  return {
    filters,
    cursor,
    draft,
    /** The draft's setter for one filter, for a field's `onValue`. */
    edit:
      (name: N, clean: (value: string) => string = (value) => value) =>
      (value: string) =>
        setDraft({ ...draft, [name]: clean(value) }),
    apply: () => navigate(href(path, Object.fromEntries(names.map((name) => [name, MOMENTS.has(name) ? utcInputToIso(draft[name]) : draft[name]])))),
    deps: [...names.map((name) => filters[name]), cursor],
  };
}

/**
 * The filters behind a "Filters" disclosure, so that the rows come first: closed unless a filter is
 * applied on a wide screen (a phone keeps it closed; its summary says how many are applied).
 */
export function FilterForm({ label, testid, onApply, applied, children }: { label: string; testid: string; onApply: () => void; applied: number; children: ComponentChildren }) {
  const [open, setOpen] = useState(() => applied > 0 && window.matchMedia('(min-width: 600px)').matches);
  return (
    <details class="filters-box" open={open} onToggle={(e) => setOpen(e.currentTarget.open)} data-testid={`${testid}-box`}>
      <summary data-testid={`${testid}-toggle`}>Filters{applied > 0 ? <span class="hint-inline"> · {applied} applied</span> : null}</summary>
      <form
        class="form inline filters"
        role="search"
        aria-label={label}
        data-testid={testid}
        onSubmit={(e) => {
          e.preventDefault();
          onApply();
        }}
      >
        {children}
      </form>
    </details>
  );
}

/** "Newest" back to the first page, "Older" to the next one (`nextCursor`), keeping the filters; test ids `<prefix>first-page`, `<prefix>next-page`. */
export function Pager({ path, filters, cursor, nextCursor, prefix = '' }: { path: string; filters: Record<string, string>; cursor: string; nextCursor: string | null | undefined; prefix?: string }) {
  return (
    <nav aria-label="Pages" class="pager">
      {cursor ? (
        <a href={href(path, filters)} data-testid={`${prefix}first-page`}>
          Newest
        </a>
      ) : null}
      {nextCursor ? (
        <a href={href(path, { ...filters, cursor: nextCursor })} data-testid={`${prefix}next-page`}>
          Older
        </a>
      ) : null}
    </nav>
  );
}
