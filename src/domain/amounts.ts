// Reward amounts: exact decimals <-> base units of an 18-decimal ERC-20, with string arithmetic and
// BigInt only. Binary floating point never touches an amount on the way in; on the way out a JSON
// number is produced only at the very edge (the API's objects), from the exact decimal text.
//
// Accepted input (docs/api.md: "amount as a JSON number or a numeric string"):
// - A numeric string holding a JSON number literal without sign: "1.5", "0.001", "1e3", "2.5E-7",
//   "123456789012345678901234567890.5". Exponent forms are accepted because Python's str(Decimal)
//   and JavaScript's String(number) produce them ("1E-7", "1e+21") for perfectly ordinary values.
//   Anything else is refused rather than guessed at: surrounding spaces, "+1", "0x10", "1_000",
//   "1,5", ".5", "1.", leading zeros ("01"), "NaN", "Infinity", "".
// - A JSON number. Its literal is read exactly from the request text (src/http/kit/json-body.ts hands the
//   literal over as a string, to the grammar above), so `1.0000000000000000001` is refused for its 19th
//   decimal and `9007199254740993` stays 9007199254740993: neither passes through a double. A number
//   that did become a double elsewhere (the CLI, a caller in code) is taken as String(n), the shortest
//   decimal that round-trips to it, which is what was written whenever it had at most 15 significant
//   digits.
// - Trailing zeros beyond 18 decimals are no loss of precision and are accepted ("0.1000…000" with
//   25 places is 0.1); a significant 19th decimal ("1e-19") is refused: it is not representable.
// - The value must be > 0 and fit a uint256 in base units.

import { ExactNumber } from './exact-json.js';

export const DECIMALS = 18;
const SCALE = 10n ** BigInt(DECIMALS);
export const MAX_UNITS = 2n ** 256n - 1n;

export type AmountErrorCode = 'invalid' | 'not_positive' | 'too_precise' | 'too_large';

export class AmountError extends Error {
  constructor(
    readonly code: AmountErrorCode,
    message: string,
  ) {
    super(message);
  }
}

const MESSAGES: Record<AmountErrorCode, string> = {
  invalid: 'Enter a valid amount: a number or a numeric string such as "1.5".',
  not_positive: 'Amount must be greater than 0.',
  too_precise: `Amount has more than ${DECIMALS} decimal places.`,
  too_large: 'Amount is too large.',
};

const fail = (code: AmountErrorCode): never => {
  throw new AmountError(code, MESSAGES[code]);
};

// A JSON number literal without its sign: int part, optional fraction, optional exponent.
const LITERAL = /^(0|[1-9][0-9]*)(?:\.([0-9]+))?(?:[eE]([+-]?)([0-9]+))?$/;

/** A request's `amount` (JSON number or numeric string) in base units. Throws AmountError. */
export function parseAmount(input: unknown): bigint {
  if (typeof input === 'number') {
    if (!Number.isFinite(input)) return fail('invalid');
    if (input <= 0) return fail('not_positive'); // also -0
    return decimalToUnits(String(input));
  }
  if (typeof input === 'string') return decimalToUnits(input);
  return fail('invalid');
}

/** A decimal literal (see the grammar above) in base units. Throws AmountError. */
export function decimalToUnits(text: string): bigint {
  const m = LITERAL.exec(text);
  if (!m) {
    // "-1.5" (and "-0") is well-formed but not positive: say so instead of "invalid".
    if (text.startsWith('-') && LITERAL.test(text.slice(1))) return fail('not_positive');
    return fail('invalid');
  }
  const [, intPart, fracPart = '', expSign, expDigits] = m;
  // value = digits × 10^-scale
  let digits = (intPart + fracPart).replace(/^0+/, '');
  if (digits === '') return fail('not_positive');
  let scale = fracPart.length;
  if (expDigits !== undefined) {
    const e = expDigits.replace(/^0+/, '') || '0';
    // Beyond a million the exponent alone decides: far too large, or far below one base unit
    // (the mantissa has at most a few thousand digits in any body we accept).
    if (e.length > 6) return fail(expSign === '-' ? 'too_precise' : 'too_large');
    scale += expSign === '-' ? Number(e) : -Number(e);
  }
  // Trailing zeros carry no precision: 1.50 is 1.5, 1500e-3 is 1.5.
  const trimmed = digits.replace(/0+$/, '');
  scale -= digits.length - trimmed.length;
  digits = trimmed;
  if (scale > DECIMALS) return fail('too_precise');
  // A uint256 has 78 digits; check the magnitude before building a huge BigInt.
  if (digits.length - scale > 78) return fail('too_large');
  const units = BigInt(digits) * 10n ** BigInt(DECIMALS - scale);
  if (units > MAX_UNITS) return fail('too_large');
  return units;
}

/** Base units as the exact decimal: no exponent, no trailing zeros ("1.501", "0.000000000000000001", "0"). */
export function formatUnits(units: bigint): string {
  if (units < 0n) return `-${formatUnits(-units)}`;
  const int = units / SCALE;
  const frac = (units % SCALE).toString().padStart(DECIMALS, '0').replace(/0+$/, '');
  return frac ? `${int}.${frac}` : `${int}`;
}

/**
 * Base units as the JSON number of the API's objects: written as the exact decimal
 * (1.000000000000000001), which JSON.parse reads as the nearest double (domain/exact-json.ts).
 */
export function unitsToNumber(units: bigint): ExactNumber {
  return new ExactNumber(formatUnits(units));
}

/** Base units kept as text in the database (SQLite has no 256-bit integers): exact both ways. */
export function unitsFromDb(text: string | null | undefined): bigint {
  if (text == null || text === '') return 0n;
  if (!/^-?[0-9]+$/.test(text)) throw new Error(`not a base-unit amount: ${JSON.stringify(text)}`);
  return BigInt(text);
}

export const unitsToDb = (units: bigint): string => units.toString();
