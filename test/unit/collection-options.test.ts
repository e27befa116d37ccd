// The collection options' rules (src/domain/collection-options.ts): royalties set together, in range,
// addresses in lower case; the ERC-7572 contract document built from a record.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { contractDocument, MAX_ROYALTY_BPS, resolveRoyalty, type Royalty } from '../../src/domain/collection-options.js';

const NONE = { royalty_receiver: null, royalty_bps: null };
const RECEIVER = '0x00000000000000000000000000000000000000Aa';

describe('resolveRoyalty', () => {
  it('takes a receiver and a rate together, the receiver in lower case', () => {
    assert.deepEqual(resolveRoyalty({ royalty_receiver: RECEIVER, royalty_bps: 250 }, NONE), {
      ok: true,
      royalty: { royalty_receiver: RECEIVER.toLowerCase(), royalty_bps: 250 },
    });
    assert.deepEqual(resolveRoyalty({}, NONE), { ok: true, royalty: NONE });
  });
  it('a change keeps what it does not name, and null clears both together', () => {
    const current = { royalty_receiver: RECEIVER.toLowerCase(), royalty_bps: 250 };
    assert.deepEqual(resolveRoyalty({ royalty_bps: 0 }, current), { ok: true, royalty: { ...current, royalty_bps: 0 } });
    assert.deepEqual(resolveRoyalty({ royalty_receiver: null, royalty_bps: null }, current), { ok: true, royalty: NONE });
  });
  it('refuses one without the other, a rate out of 0..1000, and a bad or zero address, naming the field', () => {
    const fields = (change: Parameters<typeof resolveRoyalty>[0], current: Royalty = NONE) => {
      const r = resolveRoyalty(change, current);
      return r.ok ? [] : r.problems.map((p) => `${p.field}:${p.code}`);
    };
    assert.deepEqual(fields({ royalty_receiver: RECEIVER }), ['royalty_bps:required']);
    assert.deepEqual(fields({ royalty_bps: 10 }), ['royalty_receiver:required']);
    assert.deepEqual(fields({ royalty_receiver: null }, { royalty_receiver: RECEIVER, royalty_bps: 5 }), ['royalty_receiver:required']);
    assert.deepEqual(fields({ royalty_receiver: RECEIVER, royalty_bps: MAX_ROYALTY_BPS + 1 }), ['royalty_bps:invalid']);
    assert.deepEqual(fields({ royalty_receiver: RECEIVER, royalty_bps: -1 }), ['royalty_bps:invalid']);
    assert.deepEqual(fields({ royalty_receiver: RECEIVER, royalty_bps: 2.5 }), ['royalty_bps:invalid']);
    assert.deepEqual(fields({ royalty_receiver: '0x12', royalty_bps: 1 }), ['royalty_receiver:invalid']);
    assert.deepEqual(fields({ royalty_receiver: '0x0000000000000000000000000000000000000000', royalty_bps: 1 }), ['royalty_receiver:invalid']);
  });
});

describe('contractDocument', () => {
  it('has the ERC-7572 keys marketplaces read; absent texts are left out, the royalty always stated', () => {
    const full = contractDocument({
      name: 'Badges',
      description: 'Earned',
      image_url: 'ipfs://bafkreiimage',
      external_url: 'https://example.com',
      royalty_receiver: '0xaa',
      royalty_bps: 250,
    });
    assert.deepEqual(full, {
      name: 'Badges',
      description: 'Earned',
      image: 'ipfs://bafkreiimage',
      external_link: 'https://example.com',
      seller_fee_basis_points: 250,
      fee_recipient: '0xaa',
    });
    assert.deepEqual(Object.keys(full), ['name', 'description', 'image', 'external_link', 'seller_fee_basis_points', 'fee_recipient']);
    assert.deepEqual(contractDocument({ name: 'Plain', description: null, image_url: null, external_url: null, ...NONE }), {
      name: 'Plain',
      seller_fee_basis_points: 0,
      fee_recipient: '0x0000000000000000000000000000000000000000',
    });
  });
});
