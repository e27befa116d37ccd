// Request bodies: JSON in UTF-8; an empty body means {}; number literals of amount fields are
// read exactly.
//
// JSON.parse turns every number into a double, so `1.0000000000000000001` would arrive as 1 and
// `9007199254740993` as 9007199254740992. A route that takes amounts names its amount fields
// (route config `exactNumbers`); for those, the literal text of a number is kept, as a string, which the
// amount grammar (domain/amounts.ts) reads exactly, e.g. refusing the 19th decimal instead of rounding
// it away. Only top-level fields are looked up: every amount of the API is one. Everything else is
// JSON.parse, so bodies of other routes (POST /asset) are parsed exactly as fast as before.
import { isUtf8 } from 'node:buffer';
import { ApiError } from '../../util/errors.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Top-level fields whose JSON number literals are kept as text (amounts). */
    exactNumbers?: readonly string[];
  }
}

const BLANK = /^[ \t\r\n]*$/;

export const invalidJson = (message?: string) => ApiError.of('invalid_json', message);

/** The body bytes as text; bytes that are not UTF-8 are refused rather than replaced with U+FFFD. */
export function bodyText(body: Buffer): string {
  if (!isUtf8(body)) throw invalidJson('Request body is not valid UTF-8.');
  return body.toString('utf8');
}

export function parseJsonBody(text: string, exactNumbers?: readonly string[]): unknown {
  if (BLANK.test(text)) return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw invalidJson();
  }
  if (exactNumbers && value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const obj = value as Record<string, unknown>;
    const wanted = exactNumbers.filter((k) => typeof obj[k] === 'number');
    if (wanted.length > 0) {
      const literals = topLevelNumberLiterals(text, new Set(wanted));
      for (const k of wanted) {
        const lit = literals.get(k);
        if (lit !== undefined) obj[k] = lit;
      }
    }
  }
  return value;
}

/**
 * The literal text of the number values of `wanted` keys of the top-level object in `text`, which must be
 * valid JSON (JSON.parse has accepted it) holding an object. For a key given twice the last one counts,
 * as with JSON.parse. One pass; strings and nested values are skipped, never decoded (keys with escapes
 * excepted).
 */
export function topLevelNumberLiterals(text: string, wanted: ReadonlySet<string>): Map<string, string> {
  const out = new Map<string, string>();
  let i = skipWs(text, 0) + 1; // past '{'
  for (;;) {
    i = skipWs(text, i);
    if (i >= text.length || text.charCodeAt(i) !== QUOTE) return out; // '}': done
    const keyEnd = stringEnd(text, i);
    const raw = text.slice(i + 1, keyEnd - 1);
    const key = raw.includes('\\') ? (JSON.parse(text.slice(i, keyEnd)) as string) : raw;
    i = skipWs(text, skipWs(text, keyEnd) + 1); // past ':'
    const start = i;
    i = valueEnd(text, i);
    if (wanted.has(key)) {
      const c = text.charCodeAt(start);
      if (c === MINUS || (c >= ZERO && c <= NINE)) out.set(key, text.slice(start, i));
      else out.delete(key);
    }
    i = skipWs(text, i);
    if (text.charCodeAt(i) === COMMA) i++;
  }
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const MINUS = 0x2d;
const ZERO = 0x30;
const NINE = 0x39;

function skipWs(text: string, i: number): number {
  for (;;) {
    const c = text.charCodeAt(i);
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return i;
    i++;
  }
}

/** `i` at an opening quote: the index after the closing one. */
function stringEnd(text: string, i: number): number {
  let j = i + 1;
  for (;;) {
    const q = text.indexOf('"', j);
    if (q < 0) return text.length;
    let backslashes = 0;
    for (let k = q - 1; text.charCodeAt(k) === BACKSLASH; k--) backslashes++;
    if (backslashes % 2 === 0) return q + 1;
    j = q + 1;
  }
}

/** `i` at the start of a value: the index after it. */
function valueEnd(text: string, i: number): number {
  const c = text.charCodeAt(i);
  if (c === QUOTE) return stringEnd(text, i);
  if (c === 0x7b || c === 0x5b) {
    // { or [: to the matching bracket, skipping strings (brackets inside them do not count)
    let depth = 0;
    for (let j = i; j < text.length; j++) {
      const d = text.charCodeAt(j);
      if (d === QUOTE) j = stringEnd(text, j) - 1;
      else if (d === 0x7b || d === 0x5b) depth++;
      else if (d === 0x7d || d === 0x5d) {
        if (--depth === 0) return j + 1;
      }
    }
    return text.length;
  }
  // a number, true, false or null: up to the next delimiter
  let j = i;
  for (; j < text.length; j++) {
    const d = text.charCodeAt(j);
    if (d === COMMA || d === 0x7d || d === 0x5d || d === 0x20 || d === 0x0a || d === 0x0d || d === 0x09) break;
  }
  return j;
}
