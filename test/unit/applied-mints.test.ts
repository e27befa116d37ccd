// The indexer's hint of mint transactions this process applied (src/chain/applied-mints.ts):
// only the mints of such a transaction, on its own contract, are covered; a transfer, another contract's
// log, a removed log or an unknown transaction is checked as before; the hint is dropped once read and
// kept bounded; and an outcome gives it only when every token its receipt minted was marked as logged.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { encodeEventTopics, parseAbiItem, toHex, type Hex } from 'viem';
import { AppliedMints, markedAsLogged } from '../../src/chain/applied-mints.js';
import type { RpcLog } from '../../src/chain/transfer-logs.js';

const transfer = parseAbiItem('event Transfer(address indexed from, address indexed to, uint256 indexed tokenId)');
const ZERO = '0x0000000000000000000000000000000000000000';
const CONTRACT = '0x5FbDB2315678afecb367f032d93F642f64180aa3' as Hex;
const OTHER = '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512' as Hex;
const ALICE = '0x00000000000000000000000000000000000000a1';
const BOB = '0x00000000000000000000000000000000000000b0';
const hashOf = (n: number) => toHex(n, { size: 32 });

function log(o: { hash: Hex | null; from?: string; to?: string; tokenId?: bigint; address?: Hex; removed?: boolean }): RpcLog {
  return {
    address: o.address ?? CONTRACT,
    topics: encodeEventTopics({ abi: [transfer], args: { from: (o.from ?? ZERO) as Hex, to: (o.to ?? ALICE) as Hex, tokenId: o.tokenId ?? 1n } }) as Hex[],
    blockNumber: '0x10',
    transactionHash: o.hash,
    ...(o.removed ? { removed: true } : {}),
  };
}

describe('applied mint transactions', () => {
  it('cover the mints of the transaction on its contract, whatever the case of the hash and address', () => {
    const applied = new AppliedMints();
    applied.add(hashOf(1).toUpperCase().replace('0X', '0x'), CONTRACT);
    assert.equal(applied.covers(log({ hash: hashOf(1) })), true);
    assert.equal(applied.covers(log({ hash: hashOf(1), tokenId: 2n ** 200n, address: CONTRACT.toLowerCase() as Hex })), true);
  });

  it('do not cover a transfer, another contract, a removed log, another or no transaction', () => {
    const applied = new AppliedMints();
    applied.add(hashOf(1), CONTRACT);
    assert.equal(applied.covers(log({ hash: hashOf(1), from: ALICE, to: BOB })), false);
    assert.equal(applied.covers(log({ hash: hashOf(1), address: OTHER })), false);
    assert.equal(applied.covers(log({ hash: hashOf(1), removed: true })), false);
    assert.equal(applied.covers(log({ hash: hashOf(2) })), false);
    assert.equal(applied.covers(log({ hash: null })), false);
    const { transactionHash: _, ...noHash } = log({ hash: hashOf(1) });
    assert.equal(applied.covers(noHash), false);
  });

  it('are dropped once read, and at most 1,024 are kept (the oldest go first)', () => {
    const applied = new AppliedMints();
    applied.add(hashOf(1), CONTRACT);
    applied.add(hashOf(2), CONTRACT);
    applied.forget([hashOf(1).toUpperCase().replace('0X', '0x')]);
    assert.equal(applied.covers(log({ hash: hashOf(1) })), false);
    assert.equal(applied.covers(log({ hash: hashOf(2) })), true);
    for (let i = 3; i <= 1030; i++) applied.add(hashOf(i), CONTRACT);
    assert.equal(applied.size, 1024);
    assert.equal(applied.covers(log({ hash: hashOf(2) })), false);
    assert.equal(applied.covers(log({ hash: hashOf(1030) })), true);
  });
});

describe('an outcome marked as its receipt logged', () => {
  const items = [
    { asset_uid: 'a1', token_id: 1, to: ALICE },
    { asset_uid: 'a2', token_id: 2, to: BOB },
  ];
  it('when every token minted here was marked, owned by the address it was minted to', () => {
    const marked = [
      { uid: 'a1', owner_address: ALICE.toUpperCase().replace('0X', '0x') },
      { uid: 'a2', owner_address: BOB },
    ];
    assert.equal(markedAsLogged(items, new Set([1, 2]), marked), true);
  });

  it('not when a token minted here was marked before (not among the rows), nor when an owner differs', () => {
    assert.equal(markedAsLogged(items, new Set([1, 2]), [{ uid: 'a1', owner_address: ALICE }]), false);
    assert.equal(
      markedAsLogged(items, new Set([1, 2]), [
        { uid: 'a1', owner_address: ALICE },
        { uid: 'a3', owner_address: BOB },
      ]),
      false,
    );
    assert.equal(
      markedAsLogged(items, new Set([1, 2]), [
        { uid: 'a1', owner_address: ALICE },
        { uid: 'a2', owner_address: ALICE },
      ]),
      false,
    );
    assert.equal(
      markedAsLogged(items, new Set([1, 2]), [
        { uid: 'a1', owner_address: ALICE },
        { uid: 'a2', owner_address: null },
      ]),
      false,
    );
  });

  it('not when the receipt minted nothing (reverted: the chain was asked token by token)', () => {
    assert.equal(markedAsLogged(items, new Set(), [{ uid: 'a1', owner_address: ALICE }]), false);
  });

  it('with a token not minted here: only those minted here count', () => {
    assert.equal(markedAsLogged(items, new Set([1]), [{ uid: 'a1', owner_address: ALICE }]), true);
  });
});
