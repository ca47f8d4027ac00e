import { Type, type TSchema } from 'typebox';
import { invalid } from '../../domain/errors.js';
import { listExamples } from './samples.js';

const DEFAULT_PAGE_SIZE = 50;

/** `limit` and `cursor`, as the delivery log takes them. */
export const PageQueryProperties = {
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, description: 'page size (default 50 once paging); with `limit` or `cursor` the answer is one page `{data, nextCursor}`' })),
  cursor: Type.Optional(Type.String({ maxLength: 64, description: 'nextCursor of the previous page' })),
};

export const PAGING_NOTE =
  'Pages like the delivery log: with `limit` or `cursor` the answer is `{data, nextCursor}` in creation order (pass `nextCursor` as `cursor` for the next page; null on the last); without either, the whole list as a JSON array.';

/**
 * Without `limit` or `cursor`: the whole list as a JSON array, as before paging existed; with either, one page.
 * Its examples are the item's first example as a list and as a page. The page of a named item is
 * named after it (`Account` → `AccountPage`), a type of the OpenAPI document (openapi.ts).
 */
export const ListOrPage = <T extends TSchema>(item: T) => {
  const { examples, title } = item as { examples?: unknown[]; title?: string };
  const [list, page] = examples ? listExamples(examples[0]) : [];
  const pageOptions = { ...(title ? { title: `${title}Page` } : {}), ...(page ? { examples: [page] } : {}) };
  return Type.Union([Type.Array(item), Type.Object({ data: Type.Array(item), nextCursor: Type.Union([Type.String(), Type.Null()]) }, pageOptions)], list ? { examples: [list, page] } : {});
};

/**
 * Answers a list route: every row when the caller asks for no page (today's callers), else one page
 * in creation order and the cursor of the next (null on the last page).
 */
export async function answerList<Row, Json>(
  query: { limit?: number | undefined; cursor?: string | undefined },
  load: (page: { after?: string | undefined; limit?: number | undefined }) => Promise<Row[]>,
  idOf: (row: Row) => string,
  toJson: (row: Row) => Json,
): Promise<Json[] | { data: Json[]; nextCursor: string | null }> {
  if (query.limit === undefined && query.cursor === undefined) return (await load({})).map(toJson);
  const limit = query.limit ?? DEFAULT_PAGE_SIZE;
  const rows = await load({ after: query.cursor, limit: limit + 1 });
  const page = rows.slice(0, limit);
  return { data: page.map(toJson), nextCursor: rows.length > limit ? idOf(page[page.length - 1]!) : null };
}

/** `since` and `until` of a newest-first list (the delivery log, the requests): a range of creation times. */
export const CreatedRangeQueryProperties = {
  since: Type.Optional(
    Type.String({
      format: 'date-time',
      description: 'RFC 3339 date-time with an offset (`Z`, or `%2B02:00` in a query string, where a bare `+` reads as a space): only those created at or after it',
    }),
  ),
  until: Type.Optional(Type.String({ format: 'date-time', description: 'RFC 3339 date-time with an offset: only those created before it' })),
};

/**
 * `since` and `until` as epoch milliseconds. The schema checked their format; a 400 names the
 * member that Date cannot read (a leap second, `…:60`) or a `since` after `until` (the range would
 * hold nothing: most likely the two were swapped).
 */
export function createdRange(query: { since?: string | undefined; until?: string | undefined }): { since?: number; until?: number } {
  const at = (member: 'since' | 'until') => {
    const value = query[member];
    if (value === undefined) return undefined;
    const ms = Date.parse(value);
    if (Number.isNaN(ms)) throw invalid('request querystring', [{ path: `querystring.${member}`, message: 'must be a date-time (RFC 3339), such as 2024-07-01T12:00:00Z' }]);
    return ms;
  };
  const since = at('since');
  const until = at('until');
  if (since !== undefined && until !== undefined && since > until) {
    throw invalid('request querystring', [{ path: 'querystring.since', message: 'must not be after until (since is the start of the range, until its end)' }]);
  }
  return { ...(since !== undefined ? { since } : {}), ...(until !== undefined ? { until } : {}) };
}
