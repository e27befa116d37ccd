// Request bodies: JSON.parse for everything, with amount literals kept exactly (src/http/kit/json-body.ts).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
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

  it('costs a POST /asset body no more than JSON.parse does (a measurement, printed)', () => {
    const asset = JSON.stringify({
      user_uid: '816379099131',
      collection_uid: '816379099132',
      asset_external_id: 'sword-1-3f9a2c',
      sale_price_in_usd: 9.99,
      data: {
        name: 'Sword of the north',
        unique_name: false,
        image_url: 'https://example.com/images/sword.png',
        store_image_on_ipfs: false,
        description: 'A sword forged in the north.',
        attributes: [
          { trait_type: 'power', value: 9 },
          { trait_type: 'kind', value: 'blade', display_type: 'string' },
        ],
      },
    });
    const allocate = '{"reward_uid":"816379099133","to_user_uid":"816379099131","amount":1.5,"nonce":"n-1"}';
    const time = (f: () => unknown, n = 100_000) => {
      for (let i = 0; i < 20_000; i++) f();
      const t = performance.now();
      for (let i = 0; i < n; i++) f();
      return ((performance.now() - t) * 1e6) / n; // ns per call
    };
    // Interleaved rounds, best of each: a shared machine's noise hits both sides alike.
    const compare = (a: () => unknown, b: () => unknown) => {
      let [ta, tb] = [Infinity, Infinity];
      for (let round = 0; round < 5; round++) {
        ta = Math.min(ta, time(a));
        tb = Math.min(tb, time(b));
      }
      return [ta, tb];
    };
    const bytes = Buffer.from(asset);
    const ratios: string[] = [];
    for (const [name, text, exact] of [
      ['asset', asset, undefined],
      ['allocate', allocate, amount],
    ] as const) {
      const [ours, base] = compare(
        () => parseJsonBody(text, exact),
        () => JSON.parse(text),
      );
      ratios.push(`${name} ${ours.toFixed(0)} ns vs JSON.parse ${base.toFixed(0)} ns (×${(ours / base).toFixed(3)})`);
    }
    const [utf8, plain] = compare(
      () => bodyText(bytes),
      () => bytes.toString('utf8'),
    );
    process.stdout.write(`# body parsing: ${ratios.join('; ')}; UTF-8 check + decode ${utf8.toFixed(0)} ns vs decode ${plain.toFixed(0)} ns\n`);
  });
});
