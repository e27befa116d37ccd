// A statement's parameters written into its text as literals, for a statement sent in one simple query
// with others (store/postgres/held-statements.ts). Each value becomes what the server would have made
// of it as a parameter:
// - a scalar: the text `pg` sends it as (`prepareValue`: objects as JSON, dates as text), quoted, of
//   unknown type as the parameter was, so the server gives it the same type from its context;
// - an array of texts with `"` or `\` in them (JSON documents) whose parameter is cast (`$1::text[]`,
//   as every array parameter of ours is): an `ARRAY[…]` of its elements, quoted one by one. In one
//   array literal each `"` would be escaped with a backslash and each backslash doubled again for the
//   quotes: building that text for a mint's 430 events took 25 ms, and the server read it back
//   character by character;
// - any other array: its array literal, quoted. An `ARRAY[…]` of a group of creates' short values
//   cost the server a fifth more CPU per create than the literal `array_in` reads.
import pg from 'pg';

/** `pg`'s own conversion of a parameter to the text it sends (in its runtime exports, not its types). */
const prepareValue = (pg as unknown as { utils: { prepareValue(v: unknown): unknown } }).utils.prepareValue;

/**
 * `text` with each parameter (`$1`, `$2`, …) replaced by its value as a literal. Null when a value is
 * bytes (sent in binary), or the text has something this scan does not follow (a backslash, an
 * unclosed quote or comment, a parameter without a value).
 */
export function inlineParameters(text: string, values: readonly unknown[]): string | null {
  if (text.includes('\\')) return null;
  let out = '';
  let from = 0;
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === "'" || c === '"') {
      const end = closingQuote(text, i);
      if (end < 0) return null;
      i = end + 1;
    } else if (c === '-' && text[i + 1] === '-') {
      const end = text.indexOf('\n', i);
      i = end < 0 ? text.length : end + 1;
    } else if (c === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      if (end < 0) return null;
      i = end + 2;
    } else if (c === '$' && !isIdentifierChar(text.charCodeAt(i - 1))) {
      let j = i + 1;
      while (j < text.length && isDigit(text.charCodeAt(j))) j++;
      if (j > i + 1) {
        const n = Number(text.slice(i + 1, j));
        if (n < 1 || n > values.length) return null;
        const literal = literalOf(values[n - 1], text.startsWith('::', j));
        if (literal === null) return null;
        out += text.slice(from, i) + literal;
        from = i = j;
        continue;
      }
      // A dollar-quoted string ($$ … $$, $tag$ … $tag$): skipped whole.
      const tag = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/.exec(text.slice(i, i + 64));
      if (!tag) return null;
      const end = text.indexOf(tag[0], i + tag[0].length);
      if (end < 0) return null;
      i = end + tag[0].length;
    } else i++;
  }
  return out + text.slice(from);
}

/** A parameter's value as a literal (`cast`: the parameter is followed by a cast); null for bytes. */
function literalOf(v: unknown, cast: boolean): string | null {
  if (v == null) return 'null';
  if (cast && Array.isArray(v) && v.some(needsEscapes) && !v.some(Array.isArray)) {
    const items: string[] = [];
    for (const item of v) {
      const literal = literalOf(item, false);
      if (literal === null) return null;
      items.push(literal);
    }
    return `ARRAY[${items.join(',')}]`;
  }
  const p = prepareValue(v);
  return typeof p === 'string' ? quoted(p) : null;
}

/** An array element its array literal would escape (`"`, `\\`): a JSON document, say. */
const needsEscapes = (item: unknown) => typeof item === 'string' && (item.includes('"') || item.includes('\\'));

/**
 * `s` as a string literal, as `pg`'s escapeLiteral writes it (an `E'…'` with its backslashes doubled
 * when it has any, whatever the server's standard_conforming_strings), in one native pass: escapeLiteral
 * builds it a character at a time, 25 ms for a quarter of a MB.
 */
function quoted(s: string): string {
  if (s.includes('\\')) return ` E'${s.replace(/['\\]/g, '$&$&')}'`;
  return s.includes("'") ? `'${s.replaceAll("'", "''")}'` : `'${s}'`;
}

/** The index of the quote that closes the one at `at` (a doubled quote is one inside). */
function closingQuote(text: string, at: number): number {
  const q = text[at];
  let i = at + 1;
  for (;;) {
    const end = text.indexOf(q, i);
    if (end < 0) return -1;
    if (text[end + 1] !== q) return end;
    i = end + 2;
  }
}

const isDigit = (code: number) => code >= 48 && code <= 57;
const isIdentifierChar = (code: number) =>
  isDigit(code) || (code >= 65 && code <= 90) || (code >= 97 && code <= 122) || code === 95 || code === 36 || code > 127;
