// The in-flight accounting of one chain's sender: which of this process's transactions are signed or
// sent and not yet seen in a block, which relayers are backed off, and from these the room left for
// new work (relayer slots under `maxInFlight`, gas under the chain's share of a block). Work waiting
// for room is woken when room frees (a transaction seen in a block, a new head).
import type { SignedTx } from './outcomes.js';
import { gasOf } from './recorded-fees.js';

/** The gas share of a chain with no block to share (the embedded node mines each transaction on arrival). */
export const UNLIMITED_GAS = 2n ** 62n;
/** The least share of its limit a transaction is expected to use, whatever the last ones used. */
const MIN_USED_PER_LIMIT = 0.25;
/** Longest back-off of a relayer whose node said its pool (or its share of it) is full. */
const MAX_BACKOFF_MS = 30_000;
/**
 * A transaction recorded this long ago and not among the unhandled rows is dropped from the counts;
 * a younger one may belong to a commit not visible yet.
 */
const RECENT_MS = 5000;

const scale = (gas: bigint, by: number) => BigInt(Math.ceil(Number(gas) * by));

/** An unmined transaction, as the in-flight limits count it. */
interface Unmined {
  from: string;
  gas: bigint;
  at: number;
}

export class InFlight {
  /** Signed or sent, not seen in a block: the in-flight limits are counted on these. */
  private readonly unmined = new Map<number, Unmined>();
  /** Transactions seen in a block (not yet confirmed): no longer in flight. */
  private readonly included = new Map<number, number>();
  /** Relayers whose node said its pool is full, until when, and how often in a row. */
  private readonly backoff = new Map<string, { until: number; times: number }>();
  private readonly roomWaiters = new Set<() => void>();
  /** Gas used per gas limit of this chain's recent transactions; 1 until one is seen mined. */
  private usedPerLimit = 1;

  /** Counts a transaction just recorded (before its commit: the next one of a batch sees the room it took). */
  add(id: number, from: string, gas: bigint, at: number): void {
    this.unmined.set(id, { from, gas, at });
  }

  /** How many transactions are in flight in all. */
  get size(): number {
    return this.unmined.size;
  }

  /** How many transactions of `address` are in flight. */
  count(address: string): number {
    let n = 0;
    for (const u of this.unmined.values()) if (u.from === address) n++;
    return n;
  }

  isIncluded(id: number): boolean {
    return this.included.has(id);
  }

  backedOff(address: string, now = Date.now()): boolean {
    return (this.backoff.get(address)?.until ?? 0) > now;
  }

  /** The node said its pool is full for `address`: it backs off, longer each time in a row. Returns the wait. */
  backOff(address: string): number {
    const times = (this.backoff.get(address)?.times ?? 0) + 1;
    const waitMs = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** (times - 1));
    this.backoff.set(address, { until: Date.now() + waitMs, times });
    return waitMs;
  }

  /** The node took a transaction of `address`: its back-off ends. */
  accepted(address: string): void {
    this.backoff.delete(address);
  }

  /**
   * What may still be sent before the next block: transactions (the relayers' free slots under
   * `maxInFlight`, backed-off relayers not counted) and gas, as a gas limit: the chain's share of a
   * block's gas less what the transactions in flight will use (their limits times the share of its
   * limit a transaction has been using), and never more than a block takes (a node fills a block by
   * the limits of what it includes).
   */
  room(relayers: string[], maxInFlight: number, share: bigint, blockLimit: bigint): { transactions: number; gas: bigint } {
    const now = Date.now();
    let transactions = 0;
    for (const address of relayers) {
      if (this.backedOff(address, now)) continue;
      transactions += Math.max(0, maxInFlight - this.count(address));
    }
    // The embedded node makes a block of each transaction: a block's limit is all one may take.
    if (share === UNLIMITED_GAS) return { transactions, gas: blockLimit };
    let limits = 0n;
    for (const u of this.unmined.values()) limits += u.gas;
    const used = scale(limits, this.usedPerLimit);
    const byShare = share > used ? scale(share - used, 1 / this.usedPerLimit) : 0n;
    const byBlock = blockLimit > limits ? blockLimit - limits : 0n;
    return { transactions, gas: byShare < byBlock ? byShare : byBlock };
  }

  /** A transaction's receipt was found in `block`: it no longer takes room, and its gas use is learnt once. */
  inBlock(row: SignedTx, block: number, gasUsed: bigint): void {
    if (!this.included.has(row.id)) this.learnGasUse(gasUsed, gasOf(row));
    if (this.unmined.delete(row.id)) this.freed();
    this.included.set(row.id, block);
  }

  /** A transaction seen in a block has no receipt any more (reorganised out): it is in flight again. */
  outOfBlock(row: SignedTx): void {
    if (this.included.delete(row.id)) this.unmined.set(row.id, { from: row.from_address, gas: gasOf(row), at: Date.now() });
  }

  /**
   * The counts from the unhandled rows (`live`: their ids): what is signed or sent and not seen in a
   * block, plus what this process recorded a moment ago (its commit may not be visible yet).
   */
  sync(rows: SignedTx[], live: Set<number>): void {
    const recent = Date.now() - RECENT_MS;
    for (const [id, u] of this.unmined) if (!live.has(id) && u.at < recent) this.unmined.delete(id);
    for (const r of rows) {
      if ((r.status === 'signed' || r.status === 'sent') && !this.included.has(r.id)) {
        if (!this.unmined.has(r.id)) this.unmined.set(r.id, { from: r.from_address, gas: gasOf(r), at: r.created_at });
      } else if (this.unmined.delete(r.id)) this.freed();
    }
    for (const id of this.included.keys()) if (!live.has(id)) this.included.delete(id);
  }

  /** Learns from a mined transaction how much of its gas limit a transaction uses (weighted to the recent). */
  private learnGasUse(used: bigint, limit: bigint): void {
    if (limit <= 0n) return;
    const ratio = Math.min(1, Math.max(MIN_USED_PER_LIMIT, Number(used) / Number(limit)));
    this.usedPerLimit = this.usedPerLimit * 0.7 + ratio * 0.3;
  }

  /** Wakes the work waiting for room (a transaction left the counts, or a new block came). */
  freed(): void {
    for (const w of [...this.roomWaiters]) w();
  }

  /** Resolves when room may have freed, or after `ms`. */
  untilFreed(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.roomWaiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.roomWaiters.add(done);
    });
  }
}
