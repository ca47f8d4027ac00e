/**
 * Where a JSON text stops being JSON, in one wording on every Node.js line: JSON.parse's messages
 * differ between lines ("at position 7" on Node 20, "(line 1 column 8)" added later) and some give
 * no position at all ("Unexpected token '}', "{"a":}" is not valid JSON"). So the place is found
 * here, by a scan of the grammar (RFC 8259), once JSON.parse has refused the text: iterative, so a
 * deeply nested body cannot exhaust the stack.
 */

interface JsonSyntaxError {
  /** 1-based line and column (in UTF-16 code units, as the text was read). */
  line: number;
  column: number;
  /** What is there instead of JSON: `unexpected '}'`, `the body ends early`. */
  found: string;
}

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const LITERAL = /true|false|null/y;
const ESCAPE = /\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})/y;

function isWhitespace(c: string | undefined): boolean {
  return c === ' ' || c === '\t' || c === '\n' || c === '\r';
}

function describe(c: string): string {
  const code = c.codePointAt(0)!;
  if (code < 0x20 || code === 0x7f) return `control character U+${code.toString(16).toUpperCase().padStart(4, '0')}`;
  return `unexpected '${c}'`;
}

/** The first place `text` is not JSON, or undefined when the grammar finds none (JSON.parse refused it for another reason). */
function locateJsonSyntaxError(text: string): JsonSyntaxError | undefined {
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  const closers: string[] = [];
  const at = (found?: string): JsonSyntaxError => {
    let line = 1;
    let lineStart = 0;
    for (let k = text.indexOf('\n'); k !== -1 && k < i; k = text.indexOf('\n', k + 1)) {
      line++;
      lineStart = k + 1;
    }
    return { line, column: i - lineStart + 1, found: found ?? (i >= text.length ? 'the body ends early' : describe(String.fromCodePoint(text.codePointAt(i)!))) };
  };
  const skipWhitespace = () => {
    while (isWhitespace(text[i])) i++;
  };
  const match = (pattern: RegExp): boolean => {
    pattern.lastIndex = i;
    const found = pattern.exec(text);
    if (found) i += found[0].length;
    return found !== null;
  };
  /** A string at `i` (its opening quote), or the error inside it. */
  const string = (): JsonSyntaxError | undefined => {
    i++;
    for (;;) {
      const c = text[i];
      if (c === undefined) return at();
      if (c === '"') {
        i++;
        return undefined;
      }
      if (c === '\\') {
        if (!match(ESCAPE)) return at(`an invalid escape '${text.slice(i, i + 2)}'`);
        continue;
      }
      if (c.charCodeAt(0) < 0x20) return at(`${describe(c)} inside a string (escape it)`);
      i++;
    }
  };
  /** After `{` or `,` in an object: a member name and its colon. */
  const memberName = (): JsonSyntaxError | undefined => {
    skipWhitespace();
    if (text[i] !== '"') return at(i >= text.length ? undefined : `${describe(text[i]!)} where a member name in double quotes belongs`);
    const error = string();
    if (error) return error;
    skipWhitespace();
    if (text[i] !== ':') return at(i >= text.length ? undefined : `${describe(text[i]!)} where ':' belongs`);
    i++;
    return undefined;
  };

  let expectValue = true;
  for (;;) {
    skipWhitespace();
    if (expectValue) {
      const c = text[i];
      if (c === undefined) return at();
      if (c === '{') {
        i++;
        skipWhitespace();
        if (text[i] === '}') {
          i++;
          expectValue = false;
          continue;
        }
        closers.push('}');
        const error = memberName();
        if (error) return error;
        continue;
      }
      if (c === '[') {
        i++;
        skipWhitespace();
        if (text[i] === ']') {
          i++;
          expectValue = false;
          continue;
        }
        closers.push(']');
        continue;
      }
      if (c === '"') {
        const error = string();
        if (error) return error;
      } else if (!match(NUMBER) && !match(LITERAL)) return at();
      expectValue = false;
      continue;
    }
    const closer = closers.at(-1);
    if (closer === undefined) return i < text.length ? at(`${describe(text[i]!)} after the JSON value`) : undefined;
    const c = text[i];
    if (c === undefined) return at();
    if (c === closer) {
      closers.pop();
      i++;
      continue;
    }
    if (c !== ',') return at(`${describe(c)} where ',' or '${closer}' belongs`);
    i++;
    if (closer === '}') {
      const error = memberName();
      if (error) return error;
    }
    expectValue = true;
  }
}

/** The problem detail of a body JSON.parse refused: `request body is not valid JSON: unexpected '}' at line 1, column 6`. */
export function invalidJsonMessage(text: string): string {
  const error = locateJsonSyntaxError(text);
  if (error) return `request body is not valid JSON: ${error.found} at line ${error.line}, column ${error.column}`;
  try {
    JSON.parse(text);
  } catch {
    return 'request body is not valid JSON';
  }
  // JSON, but refused by the body parser (secure-json-parse): a prototype-polluting member name.
  return 'request body is refused: a member named __proto__, or constructor holding prototype, is not accepted';
}
