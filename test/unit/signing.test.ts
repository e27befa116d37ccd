// The WebAssembly keccak and the signing built on it against viem's own, byte for byte; and the fees read
// back from signed bytes against viem's full parse.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { keccak256, parseTransaction, recoverTransactionAddress, toHex, type Hex } from 'viem';
import { mnemonicToAccount } from 'viem/accounts';
import { eip1559Head, keccakHex, serializeEip1559, signTransaction } from '../../src/chain/signing.js';

const account = mnemonicToAccount('test test test test test test test test test test test junk', { addressIndex: 3 });

test('keccakHex equals viem keccak256 for empty, short, block-boundary and large inputs', async () => {
  for (const n of [0, 1, 31, 135, 136, 137, 272, 1000, 50_000]) {
    const bytes = new Uint8Array(n).map((_, i) => (i * 7 + n) & 255);
    const hex = toHex(bytes);
    assert.equal(await keccakHex(hex), keccak256(hex), `length ${n}`);
  }
});

test('concurrent hashes do not mix', async () => {
  const inputs = Array.from({ length: 50 }, (_, i) => toHex(new Uint8Array(3000 + i).fill(i)));
  const got = await Promise.all(inputs.map((h) => keccakHex(h)));
  assert.deepEqual(
    got,
    inputs.map((h) => keccak256(h)),
  );
});

test('signTransaction gives the raw bytes of viem signTransaction, its hash, and recovers to the signer', async () => {
  const calldata = toHex(new Uint8Array(20_000).map((_, i) => i & 255));
  for (const [nonce, data, to] of [
    [0, '0x' as Hex, '0x00000000000000000000000000000000000000aa' as const],
    [17, calldata, '0x5FbDB2315678afecb367f032d93F642f64180aa3' as const],
    [1234, calldata, undefined],
  ] as const) {
    const tx = {
      type: 'eip1559',
      chainId: 31337,
      nonce,
      to,
      data,
      gas: 3_000_000n,
      maxFeePerGas: 2_000_000_000n,
      maxPriorityFeePerGas: 1_000_000n,
      value: 0n,
    } as const;
    const mine = await signTransaction(account, tx);
    const viems = await account.signTransaction(tx);
    assert.equal(mine.raw, viems);
    assert.equal(mine.hash, keccak256(viems));
    assert.equal(await recoverTransactionAddress({ serializedTransaction: mine.raw as never }), account.address);
  }
});

test('serializeEip1559 equals viem serializeTransaction, signed and unsigned, across field sizes', async () => {
  const { serializeTransaction } = await import('viem');
  const sig = { r: `0x00f1c2${'ab'.repeat(29)}` as Hex, s: `0x7f${'01'.repeat(31)}` as Hex, yParity: 1 };
  const sig0 = { r: `0x${'11'.repeat(32)}` as Hex, s: `0x0000${'22'.repeat(30)}` as Hex, yParity: 0 };
  for (const nonce of [0, 1, 127, 128, 255, 256, 65_536]) {
    for (const data of [
      '0x',
      '0x01',
      '0x7f',
      '0x80',
      toHex(new Uint8Array(55).fill(9)),
      toHex(new Uint8Array(56).fill(9)),
      toHex(new Uint8Array(70_000).fill(3)),
    ] as Hex[]) {
      const tx = {
        type: 'eip1559',
        chainId: 80002,
        nonce,
        to: nonce % 2 ? '0x5FbDB2315678afecb367f032d93F642f64180aa3' : undefined,
        data,
        gas: BigInt(nonce) * 1000n,
        maxFeePerGas: 10n ** 18n,
        maxPriorityFeePerGas: 0n,
        value: 0n,
      } as const;
      assert.equal(serializeEip1559(tx), serializeTransaction(tx));
      assert.equal(serializeEip1559(tx, sig), serializeTransaction(tx, sig));
      assert.equal(serializeEip1559(tx, sig0), serializeTransaction(tx, sig0));
    }
  }
});

test('serializeEip1559 refuses data that is not hex bytes', () => {
  const tx = { type: 'eip1559', chainId: 1, nonce: 0, data: '0x12zz' as Hex, gas: 21_000n, maxFeePerGas: 1n, maxPriorityFeePerGas: 1n, value: 0n } as const;
  assert.throws(() => serializeEip1559(tx), /data is not hex bytes/);
  assert.throws(() => serializeEip1559({ ...tx, data: '0x123' as Hex }), /data is not hex bytes/);
  assert.throws(() => serializeEip1559({ ...tx, data: '0x', to: '0x1234' }), /to is not an address/);
});

test("eip1559Head reads a transaction's fees and gas limit as viem's full parse does, and declines what it is not", async () => {
  const calldata = toHex(new Uint8Array(30_000).map((_, i) => i & 255));
  const cases = [
    { maxFeePerGas: 0n, maxPriorityFeePerGas: 0n, gas: 0n },
    { maxFeePerGas: 200n, maxPriorityFeePerGas: 127n, gas: 128n },
    { maxFeePerGas: 2_000_000_000n, maxPriorityFeePerGas: 1_000_000n, gas: 30_000_000n },
    { maxFeePerGas: 2n ** 256n - 1n, maxPriorityFeePerGas: 2n ** 255n, gas: 2n ** 64n - 1n },
  ];
  for (const [i, fees] of cases.entries()) {
    for (const data of ['0x', calldata] as Hex[]) {
      const tx = { type: 'eip1559', chainId: 80002, nonce: i * 300, to: '0x5FbDB2315678afecb367f032d93F642f64180aa3', data, value: 0n, ...fees } as const;
      const { raw } = await signTransaction(account, tx);
      const full = parseTransaction(raw as Hex);
      // viem leaves a zero field undefined.
      const viems = { maxFeePerGas: full.maxFeePerGas ?? 0n, maxPriorityFeePerGas: full.maxPriorityFeePerGas ?? 0n, gas: full.gas ?? 0n };
      assert.deepEqual(eip1559Head(raw as Hex), viems);
      assert.deepEqual(eip1559Head(raw as Hex), fees);
    }
  }
  const legacy = await account.signTransaction({ type: 'legacy', chainId: 1, nonce: 0, gas: 21_000n, gasPrice: 5n, to: account.address, value: 0n });
  assert.equal(eip1559Head(legacy), null, 'a legacy transaction is parsed in full by the caller');
  assert.equal(eip1559Head('0x02c0'), null, 'an empty list has no fee fields');
  assert.equal(eip1559Head('0x02c5820539'), null, 'a head cut short');
});
