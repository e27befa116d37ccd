import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { buildMetadata, displayName } from '../../src/domain/assets.js';
import { retryDelayMs } from '../../src/domain/backoff.js';
import { checkAddress } from '../../src/domain/address.js';

describe('asset names', () => {
  it('appends #<token id> only when unique_name is false', () => {
    assert.equal(displayName('Sword', false, 42), 'Sword #42');
    assert.equal(displayName('Sword', true, 42), 'Sword');
  });
});

describe('metadata document', () => {
  it('has the hosted service keys in order and omits optionals that were not sent', () => {
    const doc = buildMetadata('123456789012', 'Sword', {
      name: 'Sword',
      unique_name: true,
      image_url: 'https://x/y.png',
      description: null,
      external_url: undefined,
      attributes: null,
    });
    assert.deepEqual(Object.keys(doc), ['name', 'image', 'org_image_url', 'original_id']);
    assert.equal(doc.original_id, '123456789012');
  });
  it('keeps attributes with and without display_type, numbers stay numbers', () => {
    const doc = buildMetadata('1', 'n', {
      name: 'n',
      unique_name: true,
      image_url: 'https://x',
      description: 'd',
      external_url: 'https://e',
      attributes: [
        { trait_type: 'a', value: 1, display_type: 'boost_number' },
        { trait_type: 'b', value: 'x', display_type: null },
      ],
    });
    assert.deepEqual(Object.keys(doc), ['name', 'image', 'org_image_url', 'original_id', 'description', 'external_url', 'attributes']);
    assert.deepEqual(doc.attributes, [
      { trait_type: 'a', value: 1, display_type: 'boost_number' },
      { trait_type: 'b', value: 'x' },
    ]);
  });
  it('image can point at a stored copy while org_image_url keeps the source', () => {
    const doc = buildMetadata('1', 'n', { name: 'n', unique_name: true, image_url: 'https://src/img.png' }, 'ipfs://bafy');
    assert.equal(doc.image, 'ipfs://bafy');
    assert.equal(doc.org_image_url, 'https://src/img.png');
  });
});

describe('job retry backoff', () => {
  it('grows exponentially from 500 ms with jitter and caps at 5 minutes', () => {
    assert.equal(
      retryDelayMs(1, () => 0.5),
      500,
    );
    assert.equal(
      retryDelayMs(2, () => 0.5),
      1000,
    );
    assert.equal(
      retryDelayMs(5, () => 0.5),
      8000,
    );
    assert.equal(
      retryDelayMs(50, () => 0.5),
      300_000,
    );
    assert.equal(
      retryDelayMs(1, () => 0),
      400,
    );
    assert.equal(
      retryDelayMs(1, () => 1),
      600,
    );
  });
});

describe('addresses from requests', () => {
  const good = '0x52908400098527886E0F7030069857D2E4169EE7'; // EIP-55 test vector
  it('accepts any letter case, returning lower case', () => {
    assert.deepEqual(checkAddress(good), { ok: true, address: good.toLowerCase() });
    assert.deepEqual(checkAddress(good.toLowerCase()), { ok: true, address: good.toLowerCase() });
    assert.deepEqual(checkAddress('0x' + good.slice(2).toUpperCase()), { ok: true, address: good.toLowerCase() });
    // mixed case that is not the EIP-55 checksum: the same address all the same
    assert.deepEqual(checkAddress(good.replace('E0F', 'e0F')), { ok: true, address: good.toLowerCase() });
    assert.deepEqual(checkAddress('0X' + good.slice(2)), { ok: true, address: good.toLowerCase() });
  });
  it('refuses a bad length or characters, and the zero address', () => {
    assert.equal(checkAddress('0x1234').ok, false);
    assert.equal(checkAddress(good.slice(2)).ok, false);
    assert.equal(checkAddress('0x' + 'g'.repeat(40)).ok, false);
    assert.match((checkAddress('0x' + '0'.repeat(40)) as { message: string }).message, /zero address/);
  });
});
