// The fee rules: the next base fee, the tip from recent rewards, the offer under the ceiling, the
// repricing of a transaction and what a node's refusal means.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { classifySendError, feeWait, formatGwei, gweiToWei, nextBaseFee, offerFees, repriceFees, tipFromRewards, WEI_PER_GWEI } from '../../src/domain/fees.js';
import { loadConfig } from '../../src/config/config.js';

const gwei = (n: number) => gweiToWei(n);

describe('fee rules', () => {
  it('gwei with decimals to wei and back', () => {
    assert.equal(gweiToWei(1), WEI_PER_GWEI);
    assert.equal(gweiToWei(0.001), 1_000_000n);
    assert.equal(gweiToWei(134.5), 134_500_000_000n);
    assert.equal(formatGwei(134_500_000_000n), '134.5');
    assert.equal(formatGwei(50n * WEI_PER_GWEI), '50');
    assert.equal(formatGwei(1_000_000n), '0.001');
  });

  it('the next base fee moves by at most 1/8 towards the gas used against half the limit', () => {
    const b = { baseFeePerGas: gwei(100), gasLimit: 30_000_000n };
    assert.equal(nextBaseFee({ ...b, gasUsed: 15_000_000n }), gwei(100));
    assert.equal(nextBaseFee({ ...b, gasUsed: 30_000_000n }), gwei(112.5));
    assert.equal(nextBaseFee({ ...b, gasUsed: 0n }), gwei(87.5));
  });

  it('the tip is the median of the rewards of blocks that had any, at least the minimum', () => {
    assert.equal(tipFromRewards([0n, 0n], gwei(0.01)), gwei(0.01));
    assert.equal(tipFromRewards([gwei(2), 0n, gwei(30), gwei(1)], gwei(0.01)), gwei(2));
    assert.equal(tipFromRewards([gwei(2)], gwei(30)), gwei(30));
  });

  it('offers twice the next base fee plus the tip, never above the ceiling', () => {
    assert.deepEqual(offerFees(gwei(10), gwei(1), gwei(1000)), { maxFeePerGas: gwei(21), maxPriorityFeePerGas: gwei(1) });
    assert.deepEqual(offerFees(gwei(40), gwei(1), gwei(50)), { maxFeePerGas: gwei(50), maxPriorityFeePerGas: gwei(1) });
    assert.deepEqual(offerFees(gwei(60), gwei(100), gwei(50)), { maxFeePerGas: gwei(50), maxPriorityFeePerGas: gwei(50) });
  });

  it('waits while the next base fee is over the ceiling, saying so', () => {
    assert.equal(feeWait(gwei(50), gwei(50)), null);
    assert.equal(feeWait(gwei(134.2), gwei(50)), 'waiting for fees: base fee 134.2 gwei > ceiling 50 gwei');
  });

  it('reprices by 12.5 % at least, or to the current offer when higher, never above the ceiling', () => {
    const old = { maxFeePerGas: gwei(10), maxPriorityFeePerGas: gwei(1) };
    const raised = repriceFees(old, { maxFeePerGas: gwei(5), maxPriorityFeePerGas: gwei(1) }, gwei(1000))!;
    assert.ok(raised.maxFeePerGas >= gwei(11.25) && raised.maxFeePerGas < gwei(11.26));
    assert.ok(raised.maxPriorityFeePerGas >= gwei(1.125));
    assert.deepEqual(repriceFees(old, { maxFeePerGas: gwei(300), maxPriorityFeePerGas: gwei(2) }, gwei(1000)), {
      maxFeePerGas: gwei(300),
      maxPriorityFeePerGas: gwei(2),
    });
    assert.deepEqual(repriceFees(old, { maxFeePerGas: gwei(300), maxPriorityFeePerGas: gwei(2) }, gwei(50)), {
      maxFeePerGas: gwei(50),
      maxPriorityFeePerGas: gwei(2),
    });
    assert.equal(
      repriceFees({ maxFeePerGas: gwei(50), maxPriorityFeePerGas: gwei(1) }, { maxFeePerGas: gwei(50), maxPriorityFeePerGas: gwei(1) }, gwei(50)),
      null,
      'at the ceiling: no raise a node would take',
    );
  });

  it('reads what a node refusal means', () => {
    assert.equal(classifySendError('already known'), 'known');
    assert.equal(classifySendError('nonce too low: next nonce 5, tx nonce 3'), 'nonce-low');
    assert.equal(classifySendError('nonce too high'), 'nonce-high');
    assert.equal(classifySendError('replacement transaction underpriced'), 'underpriced');
    assert.equal(classifySendError('transaction underpriced'), 'underpriced');
    assert.equal(classifySendError('max fee per gas less than block base fee'), 'underpriced');
    assert.equal(classifySendError('txpool is full'), 'pool-full');
    assert.equal(classifySendError('account limit exceeded'), 'pool-full');
    assert.equal(classifySendError('insufficient funds for gas * price + value'), 'funds');
    assert.equal(classifySendError('HTTP request failed. Status: 429 Too Many Requests'), 'busy');
    assert.equal(classifySendError('intrinsic gas too low'), 'other');
  });
});

describe('chain fee settings', () => {
  const base = { DATA_DIR: '/tmp/mw-fees-test', PORT: '8080' };
  const amoy = { id: 80002, name: 'Amoy', rpc: 'http://127.0.0.1:9545' };
  it('CHAINS entries take their own settings; CHAIN_MAX_FEE_GWEI is the ceiling of the rest', () => {
    const c = loadConfig({
      ...base,
      CHAIN_MAX_FEE_GWEI: '200',
      CHAINS: JSON.stringify([
        { ...amoy, maxFeeGwei: 50, minTipGwei: 30, stuckBlocks: 5, maxInFlight: 8, blockGasShare: 0.9 },
        { id: 8453, rpc: 'https://base.example' },
      ]),
    });
    assert.deepEqual(
      c.chains.map((x) => [x.id, x.maxFeeGwei, x.minTipGwei, x.stuckBlocks, x.maxInFlight, x.blockGasShare]),
      [
        [31337, 200, 0.001, 3, 16, 0.5],
        [80002, 50, 30, 5, 8, 0.9],
        [8453, 200, 0.01, 3, 16, 0.5],
      ],
    );
    assert.equal(loadConfig(base).chains[0].maxFeeGwei, 1000, 'a ceiling by default');
  });
  it('refuses settings out of range, naming the entry', () => {
    assert.throws(() => loadConfig({ ...base, CHAINS: JSON.stringify([{ ...amoy, blockGasShare: 1.5 }]) }), /CHAINS\[0\]\.blockGasShare/);
    assert.throws(() => loadConfig({ ...base, CHAINS: JSON.stringify([{ ...amoy, maxInFlight: 0 }]) }), /CHAINS\[0\]\.maxInFlight/);
    assert.throws(
      () => loadConfig({ ...base, CHAINS: JSON.stringify([{ ...amoy, maxFeeGwei: 10, minTipGwei: 30 }]) }),
      /CHAINS\[0\]\.minTipGwei: 30 is above the ceiling/,
    );
    assert.throws(() => loadConfig({ ...base, CHAIN_MAX_FEE_GWEI: '0' }), /CHAIN_MAX_FEE_GWEI/);
  });
});
