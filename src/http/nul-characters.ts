/**
 * PostgreSQL's text and jsonb refuse the NUL character (SQLite stores it), so input carrying one
 * made a query fail with a 500 there. It is refused at the edge instead, with a 400 on both
 * databases, before any query sees it: in the URL (`%00`), in a JSON body (`\u0000` in a string)
 * and in the token endpoint's parameters.
 */
export const NUL_REFUSED = 'must not contain the NUL character (U+0000)';

export const hasNul = (text: string): boolean => text.includes('\u0000');

/** A JSON text with `\u0000` in a string: the escape not preceded by an escaped backslash. */
export function jsonHasNul(text: string): boolean {
  return text.includes('\\u0000') && /(?:^|[^\\])(?:\\\\)*\\u0000/.test(text);
}

export const urlHasNul = (url: string): boolean => url.includes('%00');
