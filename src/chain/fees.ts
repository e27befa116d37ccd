// What a chain's fee market asks for right now: the head block, the next block's base fee, the tip
// paid in recent blocks (eth_feeHistory) and, against the chain's ceiling, the fees a new transaction
// offers or the reason nothing may be sent. Read once per new block; the rules are in domain/fees.
import type { PublicClient } from 'viem';
import { feeWait, nextBaseFee, offerFees, tipFromRewards, TIP_PERCENTILE, type Fees } from '../domain/fees.js';

export interface Head {
  number: number;
  baseFee: bigint;
  /** The base fee of the block being built: what a transaction sent now must cover. */
  nextBase: bigint;
  gasLimit: bigint;
  /** Date.now() when this block was first seen: a chain whose head stops moving is told by it. */
  seenAt: number;
}

/** Blocks of rewards the tip is taken from. */
const TIP_BLOCKS = 10;
/** The tip is read again after this many new blocks (it moves slowly; one call per block is waste). */
const TIP_EVERY_BLOCKS = 5;
/**
 * A head lower than one already seen is taken only when every reading for this long said so (a chain
 * rewound); a single lower answer is a provider's backend behind the others.
 */
const LOWER_HEAD_AFTER_MS = 30_000;

export class FeeOracle {
  private current: Head | null = null;
  private tip: bigint;
  private tipAt = -Infinity;
  /** Since when every head read was lower than the current one. */
  private lowerSince: number | null = null;

  constructor(
    private readonly client: PublicClient,
    readonly policy: { ceiling: bigint; minTip: bigint },
    /** `trustLowerHead`: the node is the service's own (no backend lags): a lower head is a rewind at once. */
    private readonly opts: { trustLowerHead?: boolean } = {},
  ) {
    this.tip = policy.minTip;
  }

  get head(): Head | null {
    return this.current;
  }

  /** Reads the latest block (and the tip now and then). Returns the head and whether it is new. */
  async refresh(): Promise<{ head: Head; isNew: boolean }> {
    const block = await this.client.getBlock({ blockTag: 'latest' });
    const number = Number(block.number);
    if (this.current && this.current.number === number) {
      this.lowerSince = null;
      return { head: this.current, isNew: false };
    }
    if (this.current && number < this.current.number && !this.opts.trustLowerHead) {
      this.lowerSince ??= Date.now();
      if (Date.now() - this.lowerSince < LOWER_HEAD_AFTER_MS) return { head: this.current, isNew: false };
    }
    this.lowerSince = null;
    // A chain without EIP-1559 has a gas price, not a base fee: offering it as the base fee is what it asks.
    const baseFee = block.baseFeePerGas ?? (await this.client.getGasPrice());
    const nextBase = block.baseFeePerGas == null ? baseFee : nextBaseFee({ baseFeePerGas: baseFee, gasUsed: block.gasUsed, gasLimit: block.gasLimit });
    if (number - this.tipAt >= TIP_EVERY_BLOCKS || number < this.tipAt) await this.readTip(number);
    this.current = { number, baseFee, nextBase, gasLimit: block.gasLimit, seenAt: Date.now() };
    return { head: this.current, isNew: true };
  }

  private async readTip(number: number): Promise<void> {
    try {
      const history = await this.client.getFeeHistory({ blockCount: TIP_BLOCKS, blockTag: 'latest', rewardPercentiles: [TIP_PERCENTILE] });
      this.tip = tipFromRewards(
        (history.reward ?? []).map((r) => r[0] ?? 0n),
        this.policy.minTip,
      );
    } catch {
      // A node without eth_feeHistory: the chain's minimum tip.
      this.tip = this.policy.minTip;
    }
    this.tipAt = number;
  }

  /** The fees a transaction signed now offers (never above the ceiling). */
  offer(): Fees {
    const head = this.mustHead();
    return offerFees(head.nextBase, this.tip, this.policy.ceiling);
  }

  /** Why nothing new may be sent (the base fee is over the ceiling), or null. */
  waiting(): string | null {
    return this.current ? feeWait(this.current.nextBase, this.policy.ceiling) : null;
  }

  private mustHead(): Head {
    if (!this.current) throw new Error('no block read yet');
    return this.current;
  }
}
