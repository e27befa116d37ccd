// Item amounts (src/domain/items.ts): whole numbers in, numbers or strings out, the contract's 128-bit bound.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ItemAmountError, MAX_ITEM_AMOUNT, itemAmountOut, parseItemAmount, spendable, withinMaxSupply } from '../../src/domain/items.js';

describe('item amounts', () => {
  it('accepts positive whole numbers as JSON numbers or digit strings', () => {
    assert.equal(parseItemAmount(5), 5n);
    assert.equal(parseItemAmount('5'), 5n);
    assert.equal(parseItemAmount('9007199254740993'), 9007199254740993n);
    assert.equal(parseItemAmount(MAX_ITEM_AMOUNT.toString()), MAX_ITEM_AMOUNT);
  });

  it('refuses zero, negatives, fractions, unsafe doubles, other spellings and 2^128', () => {
    for (const bad of [0, -1, 1.5, 2 ** 60, '0', '-1', '1.5', '1e3', ' 1', '0x10', '', null, true, (MAX_ITEM_AMOUNT + 1n).toString()])
      assert.throws(() => parseItemAmount(bad), ItemAmountError, String(bad));
  });

  it('writes numbers up to 2^53 - 1 and strings beyond', () => {
    assert.equal(itemAmountOut(9007199254740991n), 9007199254740991);
    assert.equal(itemAmountOut(9007199254740992n), '9007199254740992');
  });

  it('checks the max supply against accepted mints, and spends what is not reserved', () => {
    assert.equal(withinMaxSupply(1000n, 992n, 8n), true);
    assert.equal(withinMaxSupply(1000n, 992n, 9n), false);
    assert.equal(withinMaxSupply(null, 10n ** 30n, 1n), true);
    assert.equal(spendable(5n, 2n), 3n);
    assert.equal(spendable(2n, 5n), 0n, 'a balance read lower than the reservations spends nothing');
  });
});
