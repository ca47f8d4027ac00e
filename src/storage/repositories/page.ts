/**
 * A page of a list in creation order: the rows whose id comes after `after`, at most `limit` of
 * them. Ids sort by creation time (domain/ids.ts), so the last id of a page is the next cursor.
 * No page at all means every row.
 */
export interface Page {
  after?: string | undefined;
  limit?: number | undefined;
}
