// Transfer logs decoded from raw topics agree with viem's ABI decoder, and what is not an ERC-721
// Transfer is left out.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { decodeEventLog, encodeEventTopics, padHex, parseAbiItem, toHex, type Hex } from 'viem';
import { decodeTransferLogs, TRANSFER_TOPIC, transferFilter } from '../../src/chain/transfer-logs.js';

const erc721 = parseAbiItem('event Transfer(address indexed from, address indexed to, uint256 indexed tokenId)');
const erc20 = parseAbiItem('event Transfer(address indexed from, address indexed to, uint256 value)');

describe('ERC-721 Transfer logs', () => {
  it('decode like the ABI decoder, lower case, for many tokens and addresses', () => {
    const logs = Array.from({ length: 200 }, (_, i) => {
      const from = i % 3 === 0 ? '0x0000000000000000000000000000000000000000' : toHex(BigInt(i) * 7919n + 0xabcdefn, { size: 20 });
      const to = toHex(2n ** 159n + BigInt(i) * 104729n, { size: 20 });
      const tokenId = i === 199 ? 2n ** 256n - 1n : BigInt(i * 1000);
      return {
        address: '0x5FbDB2315678afecb367f032d93F642f64180aa3' as Hex,
        topics: encodeEventTopics({ abi: [erc721], args: { from, to, tokenId } }) as Hex[],
        blockNumber: toHex(i + 1),
        data: '0x' as Hex,
      };
    });
    const ours = decodeTransferLogs(logs);
    assert.equal(ours.length, logs.length);
    ours.forEach((d, i) => {
      const ref = decodeEventLog({ abi: [erc721], topics: logs[i].topics as [Hex, ...Hex[]], data: '0x' });
      assert.equal(d.from, ref.args.from.toLowerCase());
      assert.equal(d.to, ref.args.to.toLowerCase());
      assert.equal(d.tokenId, ref.args.tokenId);
      assert.equal(d.address, logs[i].address.toLowerCase());
      assert.equal(d.blockNumber, BigInt(i + 1));
    });
  });

  it('leaves out ERC-20 Transfers, other events and removed logs', () => {
    const a = toHex(1n, { size: 20 });
    const b = toHex(2n, { size: 20 });
    const nft = { address: a, topics: encodeEventTopics({ abi: [erc721], args: { from: a, to: b, tokenId: 5n } }) as Hex[], blockNumber: '0x1' as Hex };
    const fungible = { address: a, topics: encodeEventTopics({ abi: [erc20], args: { from: a, to: b } }) as Hex[], blockNumber: '0x1' as Hex };
    assert.equal(fungible.topics[0], TRANSFER_TOPIC); // same signature: only the topic count tells them apart
    const other = { ...nft, topics: [padHex('0x01'), ...nft.topics.slice(1)] };
    assert.deepEqual(decodeTransferLogs([fungible, other, { ...nft, removed: true }]), []);
    assert.equal(decodeTransferLogs([fungible, nft])[0].tokenId, 5n);
  });

  it('asks for the Transfer topic of the given contracts over the range', () => {
    assert.deepEqual(transferFilter(['0xAbC0000000000000000000000000000000000001'], 16n, 255n), {
      address: ['0xabc0000000000000000000000000000000000001'],
      topics: [TRANSFER_TOPIC],
      fromBlock: '0x10',
      toBlock: '0xff',
    });
  });
});
