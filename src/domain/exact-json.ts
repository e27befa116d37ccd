// Numbers the API writes exactly as their decimal text: amounts and balances are exact decimals with up
// to 18 places (and up to 78 digits), which a double cannot hold (1.000000000000000001 would be written
// 1). JSON itself has no such limit, so the answer carries the exact literal; a client that parses it
// with JSON.parse gets the nearest double, the same value it got before, and one that parses numbers
// exactly (Python's json, a BigDecimal reader) gets every digit.
//
// JSON.stringify cannot write a number from text, so an ExactNumber stringifies as a marked string
// that `stringifyExact` then unquotes. The mark starts with a NUL, which no stored text holds (see
// ./text.ts), and carries a token drawn at start-up, which no one else can write.

const TOKEN = Array.from(globalThis.crypto.getRandomValues(new Uint8Array(8)), (b) => b.toString(16).padStart(2, '0')).join('');
const MARK = `\u0000${TOKEN}:`;
/** How the mark looks once JSON.stringify has written it (NUL escaped). */
const WRITTEN = `"\\u0000${TOKEN}:`;
const UNQUOTE = new RegExp(`"\\\\u0000${TOKEN}:(-?[0-9]+(?:\\.[0-9]+)?)"`, 'g');
/** A JSON number literal as the API writes them: no exponent. */
const LITERAL = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?$/;

export class ExactNumber {
  constructor(readonly text: string) {
    if (!LITERAL.test(text)) throw new Error(`not a decimal literal: ${JSON.stringify(text)}`);
  }
  toJSON(): string {
    return MARK + this.text;
  }
  /** The nearest double, as JSON.parse reads it. */
  valueOf(): number {
    return Number(this.text);
  }
}

/** JSON.stringify, with every ExactNumber written as its literal. */
export function stringifyExact(value: unknown): string {
  const s = JSON.stringify(value);
  return s?.includes(WRITTEN) ? s.replace(UNQUOTE, '$1') : s;
}
