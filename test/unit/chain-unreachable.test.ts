import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { HttpRequestError, TimeoutError, BaseError } from 'viem';
import { isChainUnreachable } from '../../src/chain/unreachable.js';

describe('isChainUnreachable', () => {
  it('is true for transport failures, also when wrapped', () => {
    assert.equal(isChainUnreachable(new HttpRequestError({ url: 'http://127.0.0.1:1', details: 'fetch failed' })), true);
    assert.equal(isChainUnreachable(new TimeoutError({ body: {}, url: 'http://127.0.0.1:1' })), true);
    assert.equal(isChainUnreachable(new BaseError('call failed', { cause: new HttpRequestError({ url: 'http://x' }) })), true);
  });
  it('is false for what the chain answered, and for other errors', () => {
    assert.equal(isChainUnreachable(new BaseError('execution reverted')), false);
    assert.equal(isChainUnreachable(new Error('nonce too low')), false);
    assert.equal(isChainUnreachable(undefined), false);
  });
});
