// What the mint outcome reads of the chain for an asset its receipt does not show (no receipt: dropped
// or rewound): `ownerOf` answers, a revert says the token does not exist, and a node that does not
// answer says nothing. The handler then fails (the outcome waits for the next pass) instead of taking
// the token as not minted and queueing it to mint again. A client that answers as the test says: the
// unit under test is the handler's reading of the answers, not the node.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ContractFunctionExecutionError, ContractFunctionRevertedError, HttpRequestError, parseAbi, type PublicClient } from 'viem';
import type { ChainCtx } from '../../src/services/context.js';
import { AppliedMints } from '../../src/chain/applied-mints.js';
import { mintOutcome } from '../../src/services/assets/mint-outcome.js';
import type { SignedTx } from '../../src/chain/outcomes.js';

const CONTRACT = '0x00000000000000000000000000000000000000c0';
const abi = parseAbi(['function ownerOf(uint256) view returns (address)']);

function handlerWith(readContract: (args: { args: [bigint] }) => Promise<string>) {
  const ctx = { sender: { client: { readContract } as unknown as PublicClient } } as unknown as ChainCtx;
  return mintOutcome(ctx, new AppliedMints());
}

const outcome = {
  row: { id: 1 } as SignedTx,
  payload: {
    collection_uid: 'c1',
    contract: CONTRACT,
    items: [
      { asset_uid: 'a1', token_id: 1, to: '0x01' },
      { asset_uid: 'a2', token_id: 2, to: '0x02' },
    ],
    rounds: {},
  },
  ok: false,
  receipt: null,
  reason: 'dropped',
};

const reverted = () =>
  new ContractFunctionExecutionError(new ContractFunctionRevertedError({ abi, functionName: 'ownerOf', message: 'ERC721NonexistentToken' }), {
    abi,
    args: [2n],
    functionName: 'ownerOf',
  });

describe('the mint outcome without a receipt', () => {
  it('asks ownerOf of each token, and takes a revert as "not minted"', async () => {
    const asked: bigint[] = [];
    const handler = handlerWith(async ({ args: [id] }) => {
      asked.push(id);
      if (id === 2n) throw reverted();
      return '0x00000000000000000000000000000000000000AA';
    });
    const effect = await handler(outcome);
    assert.equal(typeof effect, 'function');
    assert.deepEqual(asked, [1n, 2n]);
  });

  it('fails, and so waits for the next pass, when the node does not answer', async () => {
    const handler = handlerWith(async ({ args: [id] }) => {
      if (id === 2n) throw new HttpRequestError({ url: 'http://node', details: 'socket hang up' });
      return '0x00000000000000000000000000000000000000AA';
    });
    await assert.rejects(handler(outcome), HttpRequestError);
  });
});
