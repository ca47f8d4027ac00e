import { Type, type TSchema } from 'typebox';
import type { Page } from '../../storage/repositories/page.js';
import { listExamples } from './samples.js';

const DEFAULT_PAGE_SIZE = 50;

/** `limit` and `cursor`, as the delivery log takes them. */
export const PageQueryProperties = {
  limit: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 200, description: 'page size (default 50 once paging); with `limit` or `cursor` the answer is one page `{data, nextCursor}`' }),
  ),
  cursor: Type.Optional(Type.String({ maxLength: 64, description: 'nextCursor of the previous page' })),
};

export const PAGING_NOTE =
  'Pages like the delivery log: with `limit` or `cursor` the answer is `{data, nextCursor}` in creation order (pass `nextCursor` as `cursor` for the next page; null on the last); without either, the whole list as a JSON array.';

/**
 * Without `limit` or `cursor`: the whole list as a JSON array, as before paging existed; with either, one page.
 * Its examples are the item's first example as a list and as a page.
 */
export const ListOrPage = <T extends TSchema>(item: T) => {
  const examples = (item as { examples?: unknown[] }).examples;
  return Type.Union([Type.Array(item), Type.Object({ data: Type.Array(item), nextCursor: Type.Union([Type.String(), Type.Null()]) })], examples ? { examples: listExamples(examples[0]) } : {});
};

/**
 * Answers a list route: every row when the caller asks for no page (today's callers), else one page
 * in creation order and the cursor of the next (null on the last page).
 */
export async function answerList<Row, Json>(
  query: { limit?: number | undefined; cursor?: string | undefined },
  load: (page: Page) => Promise<Row[]>,
  idOf: (row: Row) => string,
  toJson: (row: Row) => Json,
): Promise<Json[] | { data: Json[]; nextCursor: string | null }> {
  if (query.limit === undefined && query.cursor === undefined) return (await load({})).map(toJson);
  const limit = query.limit ?? DEFAULT_PAGE_SIZE;
  const rows = await load({ after: query.cursor, limit: limit + 1 });
  const page = rows.slice(0, limit);
  return { data: page.map(toJson), nextCursor: rows.length > limit ? idOf(page[page.length - 1]!) : null };
}
