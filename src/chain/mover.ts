// Keeping sent transactions moving until a block takes them: a transaction the base fee overtook is
// repriced at once, one that could have been mined but was not is replaced after `stuckBlocks` (or
// CHAIN_STUCK_SECONDS on a chain that stops producing blocks), one the node no longer has is sent
// again at its nonce, and one the node keeps refusing while it blocks its account has its nonce filled.
// A replacement keeps the same nonce and call; either version may end up mined, so receipts are
// looked up under every hash a transaction had (receipts.ts).
import { parseTransaction, type Address, type Hex } from 'viem';
import type { SignedTx } from './outcomes.js';
import { COLLECTION_DEPLOY_TX, MINT_TX, REWARD_DEPLOY_TX } from './outcomes.js';
import { signTransaction } from './signing.js';
import type { Head } from './fees.js';
import { errMessage } from './node-answers.js';
import { feesOf } from './recorded-fees.js';
import { formatGwei, repriceFees, underBaseFee, type Fees } from '../domain/fees.js';
import type { ChainResources } from './resources.js';

/** How long a transaction sent to the embedded node may wait without a receipt before the node is asked to mine. */
const HELD_MS = 2000;
/**
 * Kinds whose outcome handlers take a receipt without the call's effects for what it is (the work is
 * queued again). Not the forwarder's deployment: its address is fixed by the deployer's first nonce.
 */
const FILLABLE = new Set<string>([MINT_TX, COLLECTION_DEPLOY_TX, REWARD_DEPLOY_TX]);
/** Refusals in a row of a transaction at the head of its account's line before its nonce is filled. */
const REFUSALS_BEFORE_FILL = 3;
/** An account's nonce read lower than the highest seen is taken once no higher reading came for this long. */
const LOWER_NONCE_AFTER_MS = 30_000;

export class TxMover {
  /** The first block at which a transaction could have been mined (fees enough, next in its account's line). */
  private readonly mineableSince = new Map<number, number>();
  /**
   * Each account's confirmed nonce: the highest read, with when it was last read (a lagging backend's
   * older answer does not lower it; one lower for LOWER_NONCE_AFTER_MS is a rewound chain).
   */
  private readonly accountNonce = new Map<string, { n: number; at: number }>();
  private minedAt = 0;

  constructor(private readonly res: ChainResources) {}

  /** The confirmed nonce of every account with unmined transactions, read once per block. */
  async readAccountNonces(rows: SignedTx[]): Promise<void> {
    const accounts = new Set(rows.filter((r) => r.status === 'sent' || r.status === 'signed').map((r) => r.from_address));
    await Promise.all(
      [...accounts].map(async (a) => {
        const n = await this.res.client.getTransactionCount({ address: a as Address, blockTag: 'latest' }).catch(() => null);
        if (n === null) return;
        const known = this.accountNonce.get(a);
        // The embedded node is the service's own: a lower nonce there is a rewind, not a lagging backend.
        const trusted = this.res.embedded || !known || n >= known.n || Date.now() - known.at > LOWER_NONCE_AFTER_MS;
        if (trusted) this.accountNonce.set(a, { n, at: Date.now() });
      }),
    );
  }

  /** Forgets transactions no longer followed. */
  forget(live: Set<number>): void {
    for (const id of this.mineableSince.keys()) if (!live.has(id)) this.mineableSince.delete(id);
  }

  /** Seen in a block: no longer waiting to be mined. */
  mined(id: number): void {
    this.mineableSince.delete(id);
  }

  /**
   * Keeps a sent transaction without a receipt on its way, once per block. Under the base fee: repriced
   * at once (it cannot get in, whatever else happens). Next in its account's line with fees enough,
   * but not mined within `stuckBlocks`: sent again as it is if the node lost it, else replaced with
   * higher fees. Any other the node no longer knows (dropped from its pool) is sent again at its nonce;
   * one the node keeps refusing while it blocks its account has its nonce filled.
   */
  async keepMoving(row: SignedTx, head: Head, isNew: boolean): Promise<void> {
    const { answers } = this.res;
    if (answers.repriceNext.delete(row.id)) return void (await this.replace(row, 'refused as underpriced'));
    if (!isNew) return;
    const offered = feesOf(row);
    if (underBaseFee(offered.maxFeePerGas, head.nextBase)) {
      this.mineableSince.delete(row.id);
      return void (await this.replace(row, `max fee ${formatGwei(offered.maxFeePerGas)} gwei under the base fee ${formatGwei(head.nextBase)} gwei`));
    }
    const sentLongAgo = Date.now() - (answers.sentAt.get(row.id) ?? 0) > 1000;
    const first = this.accountNonce.get(row.from_address)?.n === row.nonce;
    if (this.blocksItsAccount(row)) return void (await this.fillNonce(row, 'the node keeps refusing it'));
    if (sentLongAgo && !(await this.nodeHas(row))) {
      this.res.log.warn(
        { tx: row.id, kind: row.kind, nonce: row.nonce, from: row.from_address },
        "transaction dropped from the node's pool: sending it again at its nonce",
      );
      answers.sentAt.delete(row.id);
      this.mineableSince.set(row.id, head.number);
      return void (await this.res.broadcaster.broadcast([row]));
    }
    if (!first) return void this.mineableSince.delete(row.id); // an earlier one of its account goes first
    const since = this.mineableSince.get(row.id);
    if (since === undefined) return void this.mineableSince.set(row.id, head.number);
    if (head.number - since < this.res.tuning.stuckBlocks) return;
    this.mineableSince.set(row.id, head.number);
    await this.replace(row, `not mined within ${this.res.tuning.stuckBlocks} blocks`);
  }

  /** Next in its account's line, and refused by the node (for what it is, not an outage) time after time. */
  blocksItsAccount(row: SignedTx): boolean {
    return (
      FILLABLE.has(row.kind) && this.accountNonce.get(row.from_address)?.n === row.nonce && (this.res.answers.refusals.get(row.id) ?? 0) >= REFUSALS_BEFORE_FILL
    );
  }

  /** Whether the node has the transaction under its current hash (in its pool or mined). */
  private async nodeHas(row: SignedTx): Promise<boolean> {
    const tx = await this.res.client.request({ method: 'eth_getTransactionByHash', params: [row.hash as Hex] }).catch(() => undefined);
    return tx !== null; // an error is not proof it is gone
  }

  /**
   * The embedded node mines when a transaction arrives, and a block takes transactions only while the
   * gas left in it covers the next one's limit: one that arrived while a full block was being built can
   * stay in the node's pool until the next arrival, which at the end of a burst never comes. A
   * transaction sent more than HELD_MS ago without a receipt gets the node to mine (at most once per
   * HELD_MS). Other chains produce blocks on their own.
   */
  async mineIfHeld(row: SignedTx): Promise<void> {
    if (!this.res.embedded) return;
    const now = Date.now();
    if (now - (this.res.answers.sentAt.get(row.id) ?? now) < HELD_MS || now - this.minedAt < HELD_MS) return;
    this.minedAt = now;
    await this.res.client
      .request({ method: 'evm_mine' as any, params: [] as any })
      .catch((err) => this.res.log.warn({ err: errMessage(err) }, 'evm_mine on the embedded chain failed'));
  }

  /**
   * For a chain that stops producing blocks (the per-block rules above never run): a transaction that
   * has waited longer than CHAIN_STUCK_SECONDS while it is next in line for its account (so it blocks
   * every later one) is replaced with higher fees.
   */
  async bumpIfStuck(row: SignedTx, accountNonces: Map<string, Promise<number>>): Promise<void> {
    if (Date.now() - row.updated_at < this.res.stuckMs) return;
    if (!accountNonces.has(row.from_address))
      accountNonces.set(row.from_address, this.res.client.getTransactionCount({ address: row.from_address as Address, blockTag: 'latest' }));
    if ((await accountNonces.get(row.from_address)) !== row.nonce) return; // an earlier one blocks it, or it is already mined
    await this.replace(row, `not mined within ${Math.round(this.res.stuckMs / 1000)} s`);
  }

  /**
   * Replaces a transaction: same nonce and call, both fees raised by at least 12.5 % (nodes require
   * 10 %) or to the current offer when that is higher, never above the ceiling (when the ceiling leaves
   * no room for the raise, it waits as it is).
   */
  async replace(row: SignedTx, reason: string): Promise<boolean> {
    const old = parseTransaction(row.raw as Hex);
    const fees = repriceFees(feesOf(row), this.res.fees.offer(), this.res.ceiling);
    if (!fees) return false;
    return this.resign(row, { to: old.to ?? undefined, data: old.data ?? '0x', gas: old.gas ?? 0n, value: old.value ?? 0n }, fees, reason);
  }

  /**
   * Fills a transaction's nonce with a 0-value transfer to its own account (what a cancel is): the
   * account's later transactions can then be mined. Its outcome handler sees a receipt without the
   * call's effects and does what it does for a failed call (a mint is queued again).
   */
  async fillNonce(row: SignedTx, reason: string): Promise<boolean> {
    const fees = repriceFees(feesOf(row), this.res.fees.offer(), this.res.ceiling);
    if (!fees) return false;
    return this.resign(row, { to: row.from_address as Address, data: '0x', gas: 21_000n, value: 0n }, fees, `nonce filled: ${reason}`);
  }

  private async resign(row: SignedTx, call: { to: Address | undefined; data: Hex; gas: bigint; value: bigint }, fees: Fees, reason: string): Promise<boolean> {
    const signer = this.res.signers().find((a) => a.address.toLowerCase() === row.from_address);
    if (!signer) return false;
    const { raw, hash } = await signTransaction(signer, { type: 'eip1559', chainId: this.res.chainId, nonce: row.nonce, ...call, ...fees });
    const priors = [...(JSON.parse(row.prior_hashes) as string[]), row.hash];
    const replaced = await this.res.db
      .updateTable('chain_txs')
      .set({ raw, hash, prior_hashes: JSON.stringify(priors), bumps: row.bumps + 1, updated_at: Date.now() })
      .where('id', '=', row.id)
      .where('hash', '=', row.hash) // another worker may have replaced it already
      .where('handled', '=', 0)
      .where('status', 'in', ['signed', 'sent'])
      .returningAll()
      .executeTakeFirst();
    if (!replaced) return false;
    this.res.answers.refusals.delete(row.id);
    this.res.log.warn(
      {
        tx: row.id,
        kind: row.kind,
        nonce: row.nonce,
        account: row.from_address,
        bumps: replaced.bumps,
        maxFeeGwei: formatGwei(fees.maxFeePerGas),
        tipGwei: formatGwei(fees.maxPriorityFeePerGas),
        reason,
      },
      'transaction replaced with higher fees',
    );
    await this.res.broadcaster.broadcast([replaced]);
    return true;
  }
}
