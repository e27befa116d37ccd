// Fee rules for EIP-1559 chains, pure (amounts in wei as bigint): what to offer for the next block,
// when a signed transaction must be repriced, and when nothing may be sent because the base fee is
// above the operator's ceiling. The chain sender reads the chain and applies these.

export const WEI_PER_GWEI = 10n ** 9n;

/**
 * The max fee offered is this many times the next block's base fee (plus the tip). The base fee can rise
 * by at most 12.5 % a block, so twice covers five full blocks in a row; a transaction the base fee
 * overtakes anyway is repriced at once (see `repriceFees`), so more headroom would only make the
 * ceiling bite earlier without getting anything mined sooner.
 */
export const BASE_FEE_HEADROOM = 2n;

/** Nodes refuse a replacement that does not raise both fees by 10 %; 12.5 % clears every node's rule. */
const BUMP_PER_MILLE = 1125n;

/** The tip is this percentile of the rewards paid in recent blocks (eth_feeHistory). */
export const TIP_PERCENTILE = 50;

export interface Fees {
  maxFeePerGas: bigint;
  maxPriorityFeePerGas: bigint;
}

/** Gwei as configured (may have decimals, e.g. 0.01) to wei. */
export function gweiToWei(gwei: number): bigint {
  // Through a fixed 9-decimal string: no float rounding beyond a wei.
  const [whole, frac = ''] = gwei.toFixed(9).split('.');
  return BigInt(whole) * WEI_PER_GWEI + BigInt(frac.padEnd(9, '0').slice(0, 9));
}

/** Wei shown in gwei with at most 3 decimals ("134.5", "0.001"). */
export function formatGwei(wei: bigint): string {
  const milli = (wei * 1000n + WEI_PER_GWEI / 2n) / WEI_PER_GWEI;
  const whole = milli / 1000n;
  const frac = (milli % 1000n).toString().padStart(3, '0').replace(/0+$/, '');
  return frac ? `${whole}.${frac}` : `${whole}`;
}

/** The base fee of the block after `block` (EIP-1559: ±1/8 in proportion to the gas used against half the limit). */
export function nextBaseFee(block: { baseFeePerGas: bigint; gasUsed: bigint; gasLimit: bigint }): bigint {
  const target = block.gasLimit / 2n;
  if (target === 0n || block.gasUsed === target) return block.baseFeePerGas;
  if (block.gasUsed > target) {
    const delta = (block.baseFeePerGas * (block.gasUsed - target)) / target / 8n;
    return block.baseFeePerGas + (delta > 0n ? delta : 1n);
  }
  return block.baseFeePerGas - (block.baseFeePerGas * (target - block.gasUsed)) / target / 8n;
}

/**
 * The tip from eth_feeHistory's rewards (one percentile per block): the median over the blocks that had
 * transactions (an empty block reports 0, which says nothing about what it takes to get in), at least
 * `minTip`.
 */
export function tipFromRewards(rewards: readonly bigint[], minTip: bigint): bigint {
  const paid = rewards.filter((r) => r > 0n).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const median = paid.length ? paid[Math.floor(paid.length / 2)] : 0n;
  return median > minTip ? median : minTip;
}

/** Why nothing new may be sent now (the next block's base fee is over the ceiling), or null. */
export function feeWait(nextBase: bigint, ceiling: bigint): string | null {
  return nextBase > ceiling ? `waiting for fees: base fee ${formatGwei(nextBase)} gwei > ceiling ${formatGwei(ceiling)} gwei` : null;
}

/**
 * What a new transaction offers: the next base fee with headroom plus the tip, never above the ceiling
 * (under a base fee over the ceiling nothing is sent: see `feeWait`).
 */
export function offerFees(nextBase: bigint, tip: bigint, ceiling: bigint): Fees {
  const want = nextBase * BASE_FEE_HEADROOM + tip;
  const maxFeePerGas = want < ceiling ? want : ceiling;
  return { maxFeePerGas, maxPriorityFeePerGas: tip < maxFeePerGas ? tip : maxFeePerGas };
}

const bump = (v: bigint) => (v * BUMP_PER_MILLE) / 1000n + 1n;
const max = (a: bigint, b: bigint) => (a > b ? a : b);

/**
 * The fees of a replacement of a transaction that offered `old`: both raised by 12.5 % at least, or to
 * the current offer when that is higher, never above the ceiling. Null when the ceiling leaves no room
 * for a raise the node would accept: the transaction then waits as it is.
 */
export function repriceFees(old: Fees, current: Fees, ceiling: bigint): Fees | null {
  const minFee = bump(old.maxFeePerGas);
  const minTip = bump(old.maxPriorityFeePerGas);
  if (minFee > ceiling) return null;
  const fee = max(minFee, current.maxFeePerGas);
  const maxFeePerGas = fee < ceiling ? fee : ceiling;
  const tip = max(minTip, current.maxPriorityFeePerGas);
  if (minTip > maxFeePerGas) return null;
  return { maxFeePerGas, maxPriorityFeePerGas: tip < maxFeePerGas ? tip : maxFeePerGas };
}

/** Whether a transaction offering `maxFeePerGas` cannot get into the next block whatever its tip. */
export function underBaseFee(maxFeePerGas: bigint, nextBase: bigint): boolean {
  return maxFeePerGas < nextBase;
}

/**
 * What a node's refusal of a transaction means for the sender. Matched on the messages of geth, erigon,
 * nethermind, anvil, hardhat and the hosted providers in front of them (they pass the node's text on).
 */
export type SendRefusal =
  | 'known' // already in the pool or mined: as good as sent
  | 'nonce-low' // the nonce is used on chain: mined (its receipt will show) or taken by another; resync
  | 'nonce-high' // a gap before it: the node lost earlier ones; resync and send those first
  | 'underpriced' // a transaction at the same nonce offers as much or more, or the tip is under the pool's minimum: reprice
  | 'pool-full' // the pool or the account's share of it is full: back off
  | 'funds' // the relayer cannot pay
  | 'busy' // the provider, not the node: rate limits, timeouts, gateways; try again
  | 'other';

export function classifySendError(message: string): SendRefusal {
  if (/already known|known transaction|already imported|already in (the )?(mem)?pool|alreadyknown/i.test(message)) return 'known';
  if (
    /underpriced|fee too low|already exists.*higher|gas price too low|tip too low|less than (the )?(block )?base ?fee|fee ?cap.*(too low|below|less than)/i.test(
      message,
    )
  )
    return 'underpriced';
  if (/nonce too low|nonce.*(is )?lower than|old nonce|nonce has already been used/i.test(message)) return 'nonce-low';
  if (/nonce too high|nonce gap|nonce.*(is )?higher than|future transaction/i.test(message)) return 'nonce-high';
  if (
    /txpool is full|pool is full|mempool is full|account limit|too many (pending )?transactions|exceeds.*(per-account|account).*limit|queue.*limit/i.test(
      message,
    )
  )
    return 'pool-full';
  if (/insufficient funds/i.test(message)) return 'funds';
  if (/rate limit|too many requests|\b429\b|\b50[234]\b|timed? ?out|temporarily unavailable|ECONNRESET|ECONNREFUSED|socket hang up/i.test(message))
    return 'busy';
  return 'other';
}
