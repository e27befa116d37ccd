// Exact decimal <-> base units (18 decimals) for reward amounts.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { stringifyExact } from '../../src/domain/exact-json.js';
import { AmountError, DECIMALS, MAX_UNITS, decimalToUnits, formatUnits, parseAmount, unitsFromDb, unitsToDb, unitsToNumber } from '../../src/domain/amounts.js';

const E18 = 10n ** 18n;

function rejects(input: unknown, code: AmountError['code']) {
  assert.throws(
    () => parseAmount(input),
    (err: unknown) => err instanceof AmountError && err.code === code,
    `${typeof input === 'string' ? JSON.stringify(input) : String(input)} should be refused as ${code}`,
  );
}

describe('parseAmount: numeric strings', () => {
  it('plain decimals, exactly', () => {
    assert.equal(parseAmount('1'), E18);
    assert.equal(parseAmount('1.5'), 1_500_000_000_000_000_000n);
    assert.equal(parseAmount('0.001'), 1_000_000_000_000_000n);
    assert.equal(parseAmount('1.501'), 1_501_000_000_000_000_000n);
    assert.equal(parseAmount('0.1'), 100_000_000_000_000_000n);
    assert.equal(parseAmount('10'), 10n * E18);
  });

  it('exactly 18 decimals is the smallest unit; a significant 19th is refused', () => {
    assert.equal(parseAmount('0.000000000000000001'), 1n);
    assert.equal(parseAmount('1.000000000000000001'), E18 + 1n);
    assert.equal(parseAmount('0.123456789012345678'), 123_456_789_012_345_678n);
    rejects('0.0000000000000000001', 'too_precise');
    rejects('1.0000000000000000001', 'too_precise');
    rejects('1e-19', 'too_precise');
    rejects('1.5e-18', 'too_precise');
    rejects('1e-1000000000', 'too_precise');
  });

  it('trailing zeros beyond 18 places lose nothing and are accepted', () => {
    assert.equal(parseAmount('0.1000000000000000000000000'), 100_000_000_000_000_000n);
    assert.equal(parseAmount('1.50'), 1_500_000_000_000_000_000n);
    assert.equal(parseAmount('1500e-3'), 1_500_000_000_000_000_000n);
    assert.equal(parseAmount('10e-19'), 1n);
  });

  it('exponent forms (as String(number) and str(Decimal) write them)', () => {
    assert.equal(parseAmount('1e3'), 1000n * E18);
    assert.equal(parseAmount('1E3'), 1000n * E18);
    assert.equal(parseAmount('1e+3'), 1000n * E18);
    assert.equal(parseAmount('1.5e+21'), 1_500_000_000_000_000_000_000n * E18);
    assert.equal(parseAmount('1e-7'), 100_000_000_000n);
    assert.equal(parseAmount('2.5E-7'), 250_000_000_000n);
    assert.equal(parseAmount('1e-18'), 1n);
    assert.equal(parseAmount('1e0'), E18);
    assert.equal(parseAmount('1e0000003'), 1000n * E18);
  });

  it('huge values stay exact', () => {
    assert.equal(parseAmount('123456789012345678901234567890.5'), 123_456_789_012_345_678_901_234_567_890_500_000_000_000_000_000n);
    assert.equal(formatUnits(parseAmount('123456789012345678901234567890.5')), '123456789012345678901234567890.5');
    assert.equal(formatUnits(parseAmount('99999999999999999999999999999999.999999999999999999')), '99999999999999999999999999999999.999999999999999999');
  });

  it('the uint256 limit in base units', () => {
    assert.equal(parseAmount(formatUnits(MAX_UNITS)), MAX_UNITS);
    rejects(formatUnits(MAX_UNITS + 1n), 'too_large');
    rejects('1e60', 'too_large');
    rejects('1e10000000', 'too_large');
    rejects('9'.repeat(100), 'too_large');
  });

  it('zero and negatives are not positive', () => {
    for (const s of ['0', '0.0', '0e5', '0.000000000000000000000001e-3', '-1', '-0', '-0.5', '-1e3']) {
      // 0.000…0001e-3 is below one base unit but not zero: it is too precise.
      rejects(s, s.startsWith('0.000000000000000000000001') ? 'too_precise' : 'not_positive');
    }
  });

  it('refuses what is not a plain JSON number literal', () => {
    for (const s of [
      '',
      ' ',
      ' 1',
      '1 ',
      '+1',
      '0x10',
      '0b1',
      '0o7',
      '1_000',
      '1,5',
      '1,000',
      '.5',
      '1.',
      '01',
      '00.5',
      'NaN',
      'Infinity',
      '-Infinity',
      'abc',
      '1e',
      'e3',
      '1e+',
      '1.2.3',
      '٣',
      '１',
      '1\n',
      '--1',
      '1e3.5',
    ]) {
      rejects(s, 'invalid');
    }
  });
});

describe('parseAmount: JSON numbers', () => {
  it('takes the shortest round-trip decimal of the double', () => {
    assert.equal(parseAmount(0.001), 1_000_000_000_000_000n);
    assert.equal(parseAmount(0.1), 100_000_000_000_000_000n); // not 100000000000000005551…
    assert.equal(parseAmount(1.501), 1_501_000_000_000_000_000n);
    assert.equal(parseAmount(1), E18);
    assert.equal(parseAmount(JSON.parse('1.5')), 1_500_000_000_000_000_000n);
  });

  it('exponent doubles: 1e-7, 1e21 and beyond', () => {
    assert.equal(String(1e-7), '1e-7');
    assert.equal(parseAmount(1e-7), 100_000_000_000n);
    assert.equal(parseAmount(1.5e21), 1_500_000_000_000_000_000_000n * E18);
    assert.equal(parseAmount(1e-18), 1n);
    assert.equal(parseAmount(JSON.parse('1e3')), 1000n * E18);
  });

  it('a sum computed in doubles is taken as the client sent it; the same sum in base units is exact', () => {
    // The client's own float bug: 0.1 + 0.2 is the double 0.30000000000000004, and that is what it sent.
    assert.equal(parseAmount(0.1 + 0.2), 300_000_000_000_000_040n);
    // Sums done by the service are in base units, so 0.1 + 0.2 is 0.3 exactly.
    assert.equal(parseAmount(0.1) + parseAmount(0.2), parseAmount('0.3'));
    assert.equal(formatUnits(parseAmount(0.1) + parseAmount(0.2)), '0.3');
    assert.equal(Number(unitsToNumber(parseAmount(0.1) + parseAmount(0.2))), 0.3);
    let sum = 0n;
    for (let i = 0; i < 10; i++) sum += parseAmount(0.1);
    assert.equal(sum, E18);
    assert.equal(parseAmount('0.001') + parseAmount('1.5'), parseAmount('1.501'));
  });

  it('refuses NaN, infinities, zero, negative zero and negatives', () => {
    rejects(Number.NaN, 'invalid');
    rejects(Number.POSITIVE_INFINITY, 'invalid');
    rejects(Number.NEGATIVE_INFINITY, 'invalid');
    rejects(0, 'not_positive');
    rejects(-0, 'not_positive');
    rejects(-1.5, 'not_positive');
    rejects(1e-19, 'too_precise');
    rejects(5e-324, 'too_precise');
    rejects(1e300, 'too_large');
    rejects(Number.MAX_VALUE, 'too_large');
  });

  it('refuses other types', () => {
    for (const v of [null, undefined, true, {}, [], [1], 1n]) rejects(v, 'invalid');
  });

  it('errors carry a message for the API', () => {
    assert.throws(() => parseAmount('1e-19'), /more than 18 decimal places/);
    assert.throws(() => parseAmount('-1'), /greater than 0/);
    assert.throws(() => parseAmount('x'), /valid amount/);
  });
});

describe('formatUnits / unitsToNumber', () => {
  it('exact decimal text without trailing zeros or exponent', () => {
    assert.equal(DECIMALS, 18);
    assert.equal(formatUnits(0n), '0');
    assert.equal(formatUnits(1n), '0.000000000000000001');
    assert.equal(formatUnits(E18), '1');
    assert.equal(formatUnits(1_501_000_000_000_000_000n), '1.501');
    assert.equal(formatUnits(10n * E18), '10');
    assert.equal(formatUnits(-1_500_000_000_000_000_000n), '-1.5');
    assert.equal(formatUnits(MAX_UNITS), '115792089237316195423570985008687907853269984665640564039457.584007913129639935');
  });

  it('round-trips every accepted literal to its canonical text', () => {
    for (const [input, text] of [
      ['1.501', '1.501'],
      ['1e3', '1000'],
      ['0.10', '0.1'],
      ['1.5e+21', '1500000000000000000000'],
      ['2.5E-7', '0.00000025'],
    ] as const) {
      assert.equal(formatUnits(parseAmount(input)), text);
    }
  });

  it('JSON numbers written as the exact decimal, which JSON.parse reads as the nearest double', () => {
    const n = unitsToNumber(1_501_000_000_000_000_000n);
    assert.equal(Number(n), 1.501);
    assert.equal(stringifyExact({ amount: n }), '{"amount":1.501}');
    assert.equal(stringifyExact(unitsToNumber(1_000_000_000_000_000n)), '0.001');
    assert.equal(stringifyExact(unitsToNumber(0n)), '0');
    assert.equal(stringifyExact(unitsToNumber(1n)), '0.000000000000000001');
    assert.equal(stringifyExact(unitsToNumber(300_000_000_000_000_000n)), '0.3');
    // Digits a double cannot hold are written all the same.
    assert.equal(
      stringifyExact({ a: unitsToNumber(1_000_000_000_000_000_001n), b: [unitsToNumber(999_999_999_999_999_999_999n)] }),
      '{"a":1.000000000000000001,"b":[999.999999999999999999]}',
    );
    assert.equal(stringifyExact({ big: unitsToNumber(9007199254740993n * 10n ** 18n) }), '{"big":9007199254740993}');
    // JSON.parse reads what it read before (the double nearest to the exact value).
    for (const s of [
      '123456789.012345',
      '0.000123456789012345',
      '999999999999999',
      '1.23456789012345',
      '1.000000000000000001',
      '999.999999999999999999',
      '3.700000000000000002',
      '9007199254740993',
    ]) {
      const units = parseAmount(s);
      assert.equal(JSON.parse(stringifyExact({ v: unitsToNumber(units) })).v, Number(formatUnits(units)));
      assert.equal(parseAmount(stringifyExact(unitsToNumber(units))), units);
    }
    // Text that only looks like the mark is written as the text it is.
    assert.equal(stringifyExact({ s: '\u0000abc:1' }), JSON.stringify({ s: '\u0000abc:1' }));
  });
});

describe('database text', () => {
  it('round-trips base units exactly and refuses anything else', () => {
    assert.equal(unitsFromDb(unitsToDb(MAX_UNITS)), MAX_UNITS);
    assert.equal(unitsFromDb('0'), 0n);
    assert.equal(unitsFromDb(null), 0n);
    assert.throws(() => unitsFromDb('1.5'));
    assert.throws(() => unitsFromDb('1e3'));
  });
});

describe('decimalToUnits', () => {
  it('is the string grammar alone', () => {
    assert.equal(decimalToUnits('42'), 42n * E18);
    assert.throws(() => decimalToUnits(' 42'), AmountError);
  });
});
