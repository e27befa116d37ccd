// Request bodies: JSON.parse for everything, with amount literals kept exactly (src/http/kit/json-body.ts).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { bodyText, parseJsonBody, topLevelNumberLiterals } from '../../src/http/kit/json-body.js';
import { ApiError } from '../../src/util/errors.js';
import { parseAmount } from '../../src/domain/amounts.js';

const amount = ['amount'] as const;

describe('JSON bodies', () => {
  it('an empty or blank body is {}; anything else must be JSON', () => {
    assert.deepEqual(parseJsonBody(''), {});
    assert.deepEqual(parseJsonBody(' \r\n\t'), {});
    assert.deepEqual(parseJsonBody('{"a":[1,{"b":null}]}'), { a: [1, { b: null }] });
    for (const bad of ['{', '{"a":1,}', 'nope', '\u00a0']) {
      assert.throws(
        () => parseJsonBody(bad),
        (e: unknown) => e instanceof ApiError && e.status === 400 && e.details[0].code === 'invalid_json',
        bad,
      );
    }
  });

  it('bytes that are not UTF-8 are refused, not replaced', () => {
    assert.equal(bodyText(Buffer.from('{"name":"épée 🗡"}')), '{"name":"épée 🗡"}');
    for (const bad of [[0xff], [0x22, 0xc3, 0x22], [0xed, 0xa0, 0x80]]) {
      assert.throws(
        () => bodyText(Buffer.from(bad)),
        (e: unknown) => e instanceof ApiError && e.status === 400 && /UTF-8/.test(e.message),
      );
    }
  });

  it('amount literals are kept exactly, as text the amount grammar reads', () => {
    const cases: [string, string][] = [
      ['1.0000000000000000001', '1.0000000000000000001'],
      ['9007199254740993', '9007199254740993'],
      ['1.5', '1.5'],
      ['-2', '-2'],
      ['1E400', '1E400'],
      ['2.50e-3', '2.50e-3'],
      ['0.30000000000000004', '0.30000000000000004'],
    ];
    for (const [lit, kept] of cases) {
      const body = parseJsonBody(`{"reward_uid":"1","amount":${lit},"nonce":7}`, amount) as Record<string, unknown>;
      assert.equal(body.amount, kept, lit);
      assert.equal(body.nonce, 7, 'other numbers stay numbers');
    }
    assert.equal(parseAmount((parseJsonBody('{"amount": 9007199254740993}', amount) as { amount: string }).amount), 9007199254740993n * 10n ** 18n);
    assert.throws(() => parseAmount((parseJsonBody('{"amount":1.0000000000000000001}', amount) as { amount: string }).amount), /more than 18 decimal places/);
    // A string stays the string the client sent; routes without exact fields get plain numbers.
    assert.equal((parseJsonBody('{"amount":"1.5"}', amount) as { amount: unknown }).amount, '1.5');
    assert.equal((parseJsonBody('{"amount":1.0000000000000000001}') as { amount: unknown }).amount, 1);
  });

  it('finds the top-level key only: nested objects, strings that look like keys and escaped keys', () => {
    const text = String.raw`{"x":{"amount":1},"s":"\"amount\":2,","a\u006dount":3.10,"arr":[{"amount":4},"]}"],"amount" : 5.000000000000000000001 , "z":"\\"}`;
    assert.deepEqual(topLevelNumberLiterals(text, new Set(['amount'])), new Map([['amount', '5.000000000000000000001']]));
    // a duplicate key: the last one counts, as for JSON.parse (a string last: nothing to keep)
    assert.equal((parseJsonBody('{"amount":1.0000000000000000001,"amount":2}', amount) as { amount: unknown }).amount, '2');
    assert.equal((parseJsonBody('{"amount":1.0000000000000000001,"amount":"2"}', amount) as { amount: unknown }).amount, '2');
    assert.equal(
      (parseJsonBody(String.raw`{"amount":"x","am\u006funt":1.0000000000000000001}`, amount) as { amount: unknown }).amount,
      '1.0000000000000000001',
    );
    // arrays and scalars at the top level are left alone
    assert.deepEqual(parseJsonBody('[1.0000000000000000001]', amount), [1]);
    // biome-ignore lint/correctness/noPrecisionLoss: the double a plain JSON.parse gives is what is compared.
    assert.equal(parseJsonBody('12345678901234567890', amount), 12345678901234567890);
  });
});
