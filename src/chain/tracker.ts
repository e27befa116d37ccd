// The tracker: follows the sender's recorded transactions until their outcome is applied. Each pass
// sends what the node does not have, looks receipts up (once per block), applies outcomes, and keeps
// the rest moving: a transaction the base fee overtook is repriced at once, one that could have been
// mined but was not is replaced after `stuckBlocks`, one the node keeps refusing while it blocks its
// account has its nonce filled. Now and then it compares the database with the chain (reconcile): a
// recorded transaction whose nonce is at or above its account's nonce on chain is not on chain, so it
// is broadcast again, byte for byte, in nonce order (same nonce, same contract addresses).
import type { Logger } from 'pino';
import { sql } from 'kysely';
import { parseTransaction, type Address, type Hex, type PublicClient, type TransactionReceipt } from 'viem';
import type { Db } from '../store/db.js';
import type { ChainSigner } from './signer.js';
import { COLLECTION_DEPLOY_TX, MINT_TX, REWARD_DEPLOY_TX, type ChainTxRow, type OutcomeHandlers } from './outcomes.js';
import { signTransaction } from './signing.js';
import { CANCELLED_REASON, cancelledByOperator } from './cancel.js';
import type { FeeOracle, Head } from './fees.js';
import type { InFlight } from './in-flight.js';
import { errMessage, type NodeAnswers } from './node-answers.js';
import { OutcomeApplier, minedFacts } from './outcome-apply.js';
import { feesOf } from './recorded-fees.js';
import { formatGwei, repriceFees, underBaseFee, type Fees } from '../domain/fees.js';

/** `handled = 0` as a literal: the planners then use the partial index of unhandled transactions. */
export const UNHANDLED = sql.lit(0);

/** How long a transaction sent to the embedded node may wait without a receipt before the node is asked to mine. */
const HELD_MS = 2000;
/** A sent transaction the node does not answer for is sent again after this long (a lost answer, a restarted node). */
const RESEND_MS = 10_000;
/** How often the database is compared with the chain when nothing asks for it sooner. */
const RECONCILE_MS = 5000;
/**
 * Kinds whose outcome handlers take a receipt without the call's effects for what it is (the work is
 * queued again). Not the forwarder's deployment: its address is fixed by the deployer's first nonce.
 */
const FILLABLE = new Set<string>([MINT_TX, COLLECTION_DEPLOY_TX, REWARD_DEPLOY_TX]);
/** Refusals in a row of a transaction at the head of its account's line before its nonce is filled. */
const REFUSALS_BEFORE_FILL = 3;

/** What the tracker needs of its sender. */
export interface TrackerHost {
  /** Sends recorded transactions to the node, after every earlier broadcast. */
  broadcast(rows: ChainTxRow[]): Promise<void>;
  /** Reads the head block (and wakes the work waiting for room when it is new). */
  readHead(): Promise<Head>;
  /** Whether a broadcast of this process is about to send the transaction. */
  queued(id: number): boolean;
}

export interface TrackerDeps {
  db: Db;
  client: PublicClient;
  chainId: number;
  log: Logger;
  oracle: FeeOracle;
  /** The highest max fee per gas ever offered. */
  ceiling: bigint;
  stuckBlocks: number;
  embedded: boolean;
  confirmations: number;
  /** Wall-clock limit, only for a chain that stops producing blocks. */
  stuckMs?: number;
  /** The accounts whose transactions may be signed again (relayers and the deployer). */
  signers: () => ChainSigner[];
  inFlight: InFlight;
  answers: NodeAnswers;
  host: TrackerHost;
}

export class ChainTracker {
  /** The block a transaction was last looked up at: a receipt cannot appear before the next block. */
  private readonly lookedUpAt = new Map<number, number>();
  /** The first block at which a transaction could have been mined (fees enough, next in its account's line). */
  private readonly mineableSince = new Map<number, number>();
  /** Signed transactions refused as underpriced, by the block they wait out before they are sent again. */
  private readonly heldAt = new Map<number, number>();
  /** Each account's confirmed nonce at the last block read. */
  private readonly accountNonce = new Map<string, number>();
  /** The block of the last pass: the per-block rules run once per block. */
  private trackedBlock = -1;
  private lastReconcile = 0;
  private minedAt = 0;
  private readonly outcomes: OutcomeApplier;
  private readonly db: Db;
  private readonly client: PublicClient;
  private readonly inFlight: InFlight;
  private readonly answers: NodeAnswers;
  private readonly host: TrackerHost;

  constructor(private readonly d: TrackerDeps) {
    this.db = d.db;
    this.client = d.client;
    this.inFlight = d.inFlight;
    this.answers = d.answers;
    this.host = d.host;
    this.outcomes = new OutcomeApplier(d.db, d.log, (row) => this.receiptFor(row));
  }

  useOutcomes(handlers: OutcomeHandlers): void {
    this.outcomes.use(handlers);
  }

  /** Whether the database is due to be compared with the chain. */
  reconcileDue(): boolean {
    return Date.now() - this.lastReconcile > RECONCILE_MS;
  }

  /** A node answer says the chain and the database may disagree: the next pass compares them. */
  reconcileSoon(): void {
    this.lastReconcile = 0;
  }

  async trackOnce(): Promise<void> {
    const rows = await this.db
      .selectFrom('chain_txs')
      .selectAll()
      .where('handled', '=', UNHANDLED)
      .where('chain_id', '=', this.d.chainId)
      .orderBy('from_address')
      .orderBy('nonce')
      .limit(500)
      .execute();
    // The head is read while anything is in flight (or waits for confirmations); outcomes of mined
    // transactions alone need no block.
    const live = rows.some((r) => r.status === 'signed' || r.status === 'sent');
    if (!live && this.inFlight.size === 0) {
      this.countInFlight(rows);
      await Promise.all(rows.filter((r) => !this.host.queued(r.id)).map((row) => this.applyRecorded(row)));
      return;
    }
    const head = await this.host.readHead();
    // New to the tracker (the head may have been read by work waiting for room meanwhile).
    const isNew = head.number !== this.trackedBlock;
    this.trackedBlock = head.number;
    this.countInFlight(rows);
    if (rows.length === 0) return;
    await this.sendUnsent(rows, head);
    if (isNew) await this.readAccountNonces(rows);
    const accountNonces = new Map<string, Promise<number>>();
    await Promise.all(rows.map((row) => this.trackRow(row, head, isNew, accountNonces)));
  }

  /** Broadcasts what the node should have and may not: new, or sent long ago without an answer. */
  private async sendUnsent(rows: ChainTxRow[], head: Head): Promise<void> {
    const { sentAt, resendAccount } = this.answers;
    if (resendAccount.size) {
      // "nonce too high": every unmined transaction of the account goes again, in nonce order.
      for (const r of rows) if (resendAccount.has(r.from_address)) sentAt.delete(r.id);
      resendAccount.clear();
    }
    for (const [id, block] of this.heldAt) if (block !== head.number) this.heldAt.delete(id);
    const waits = (r: ChainTxRow) =>
      this.host.queued(r.id) || this.inFlight.backedOff(r.from_address) || this.inFlight.isIncluded(r.id) || this.heldAt.has(r.id);
    const unsent = rows.filter((r) => !waits(r) && (r.status === 'signed' || (r.status === 'sent' && Date.now() - (sentAt.get(r.id) ?? 0) > RESEND_MS)));
    if (unsent.length) await this.host.broadcast(unsent);
  }

  /** One unhandled transaction: its outcome applied when known, else looked up (once per block) and kept moving. */
  private async trackRow(row: ChainTxRow, head: Head, isNew: boolean, accountNonces: Map<string, Promise<number>>): Promise<void> {
    if (this.host.queued(row.id)) return; // its broadcast wakes the tracker when it is sent
    if (row.status === 'mined' || row.status === 'reverted') return this.applyRecorded(row);
    // A receipt appears with a block: once per block is enough (a hosted provider counts every call).
    // The embedded chain mines on arrival, so its blocks come with the transactions.
    if (this.lookedUpAt.get(row.id) === head.number && !this.answers.repriceNext.has(row.id)) return;
    this.lookedUpAt.set(row.id, head.number);
    const receipt = await this.receiptFor(row);
    if (!receipt) return this.withoutReceipt(row, head, isNew, accountNonces);
    this.inFlight.inBlock(row, Number(receipt.blockNumber), receipt.gasUsed);
    this.mineableSince.delete(row.id);
    const confirmations = this.d.confirmations;
    if (confirmations > 0 && head.number - Number(receipt.blockNumber) < confirmations) return;
    // An operator's Cancel mined in its place (src/chain/cancel.ts) is a failure with its own reason.
    const cancelled = cancelledByOperator(row, receipt);
    const ok = receipt.status === 'success' && !cancelled;
    this.answers.sentAt.delete(row.id);
    // The receipt's facts are written with the outcome, in its transaction (one write, not two).
    await this.outcomes.apply(
      row,
      { ok, receipt, reason: ok ? undefined : cancelled ? CANCELLED_REASON : 'reverted on chain' },
      minedFacts(receipt, cancelled),
    );
  }

  /** A transaction whose status the tracker set already: its outcome is applied (again, if it failed before). */
  private applyRecorded(row: ChainTxRow): Promise<void> {
    return this.outcomes.apply(row, { ok: row.status === 'mined', receipt: null, reason: row.error ?? undefined });
  }

  /** A signed or sent transaction without a receipt (under any of its hashes). */
  private async withoutReceipt(row: ChainTxRow, head: Head, isNew: boolean, accountNonces: Map<string, Promise<number>>): Promise<void> {
    this.inFlight.outOfBlock(row); // when it had been seen in a block: reorganised out
    if (row.status === 'signed') {
      // Repriced (or, at the ceiling already, left to wait for the base fee to come down) and sent
      // again with the next block, not the next pass: a node may see a base fee the last block
      // read does not show yet, and bumps every pass would climb to the ceiling in seconds.
      if (this.heldAt.has(row.id)) return;
      if (this.answers.repriceNext.delete(row.id)) {
        await this.replace(row, 'refused as underpriced');
        return void this.heldAt.set(row.id, head.number);
      }
      if (isNew && this.blocksItsAccount(row)) return void (await this.fillNonce(row, 'the node keeps refusing it'));
    }
    if (row.status === 'sent') {
      await this.keepMoving(row, head, isNew);
      if (Date.now() - head.seenAt > (this.d.stuckMs ?? 60_000)) await this.bumpIfStuck(row, accountNonces);
      await this.mineIfHeld(row);
    }
  }

  /**
   * The in-flight counts from the unhandled rows (see InFlight.sync). Per-row memory of transactions
   * no longer unhandled is dropped.
   */
  private countInFlight(rows: ChainTxRow[]): void {
    const live = new Set(rows.map((r) => r.id));
    this.inFlight.sync(rows, live);
    for (const m of [this.lookedUpAt, this.mineableSince]) for (const id of m.keys()) if (!live.has(id)) m.delete(id);
    this.answers.forget(live);
  }

  /** The confirmed nonce of every account with unmined transactions, read once per block. */
  private async readAccountNonces(rows: ChainTxRow[]): Promise<void> {
    const accounts = new Set(rows.filter((r) => r.status === 'sent' || r.status === 'signed').map((r) => r.from_address));
    await Promise.all(
      [...accounts].map(async (a) => {
        const n = await this.client.getTransactionCount({ address: a as Address, blockTag: 'latest' }).catch(() => null);
        if (n !== null) this.accountNonce.set(a, n);
      }),
    );
  }

  /**
   * Keeps a sent transaction without a receipt on its way, once per block. Under the base fee: repriced
   * at once (it cannot get in, whatever else happens). Next in its account's line with fees enough,
   * but not mined within `stuckBlocks`: sent again as it is if the node lost it, else replaced with
   * higher fees. Any other the node no longer knows (dropped from its pool) is sent again at its nonce;
   * one the node keeps refusing while it blocks its account has its nonce filled.
   */
  private async keepMoving(row: ChainTxRow, head: Head, isNew: boolean): Promise<void> {
    if (this.answers.repriceNext.delete(row.id)) return void (await this.replace(row, 'refused as underpriced'));
    if (!isNew) return;
    const offered = feesOf(row);
    if (underBaseFee(offered.maxFeePerGas, head.nextBase)) {
      this.mineableSince.delete(row.id);
      return void (await this.replace(row, `max fee ${formatGwei(offered.maxFeePerGas)} gwei under the base fee ${formatGwei(head.nextBase)} gwei`));
    }
    const sentLongAgo = Date.now() - (this.answers.sentAt.get(row.id) ?? 0) > 1000;
    const first = this.accountNonce.get(row.from_address) === row.nonce;
    if (this.blocksItsAccount(row)) return void (await this.fillNonce(row, 'the node keeps refusing it'));
    if (sentLongAgo && !(await this.nodeHas(row))) {
      this.d.log.warn(
        { tx: row.id, kind: row.kind, nonce: row.nonce, from: row.from_address },
        "transaction dropped from the node's pool: sending it again at its nonce",
      );
      this.answers.sentAt.delete(row.id);
      this.mineableSince.set(row.id, head.number);
      return void (await this.host.broadcast([row]));
    }
    if (!first) return void this.mineableSince.delete(row.id); // an earlier one of its account goes first
    const since = this.mineableSince.get(row.id);
    if (since === undefined) return void this.mineableSince.set(row.id, head.number);
    if (head.number - since < this.d.stuckBlocks) return;
    this.mineableSince.set(row.id, head.number);
    await this.replace(row, `not mined within ${this.d.stuckBlocks} blocks`);
  }

  /** Next in its account's line, and refused by the node (for what it is, not an outage) time after time. */
  private blocksItsAccount(row: ChainTxRow): boolean {
    return FILLABLE.has(row.kind) && this.accountNonce.get(row.from_address) === row.nonce && (this.answers.refusals.get(row.id) ?? 0) >= REFUSALS_BEFORE_FILL;
  }

  /** Whether the node has the transaction under its current hash (in its pool or mined). */
  private async nodeHas(row: ChainTxRow): Promise<boolean> {
    const tx = await this.client.request({ method: 'eth_getTransactionByHash', params: [row.hash as Hex] }).catch(() => undefined);
    return tx !== null; // an error is not proof it is gone
  }

  /**
   * The embedded node mines when a transaction arrives, and a block takes transactions only while the
   * gas left in it covers the next one's limit: one that arrived while a full block was being built can
   * stay in the node's pool until the next arrival, which at the end of a burst never comes. A
   * transaction sent more than HELD_MS ago without a receipt gets the node to mine (at most once per
   * HELD_MS). Other chains produce blocks on their own.
   */
  private async mineIfHeld(row: ChainTxRow): Promise<void> {
    if (!this.d.embedded) return;
    const now = Date.now();
    if (now - (this.answers.sentAt.get(row.id) ?? now) < HELD_MS || now - this.minedAt < HELD_MS) return;
    this.minedAt = now;
    await this.client
      .request({ method: 'evm_mine' as any, params: [] as any })
      .catch((err) => this.d.log.warn({ err: errMessage(err) }, 'evm_mine on the embedded chain failed'));
  }

  /** The receipt of a transaction under its current hash or any hash it had before a replacement. */
  private async receiptFor(row: ChainTxRow): Promise<TransactionReceipt | null> {
    for (const hash of [row.hash, ...(JSON.parse(row.prior_hashes) as string[])]) {
      const r = await this.client.getTransactionReceipt({ hash: hash as Hex }).catch(() => null);
      if (r) return r;
    }
    return null;
  }

  /**
   * For a chain that stops producing blocks (the per-block rules above never run): a transaction that
   * has waited longer than CHAIN_STUCK_SECONDS while it is next in line for its account (so it blocks
   * every later one) is replaced with higher fees.
   */
  private async bumpIfStuck(row: ChainTxRow, accountNonces: Map<string, Promise<number>>): Promise<void> {
    const stuckMs = this.d.stuckMs ?? 60_000;
    if (Date.now() - row.updated_at < stuckMs) return;
    if (!accountNonces.has(row.from_address))
      accountNonces.set(row.from_address, this.client.getTransactionCount({ address: row.from_address as Address, blockTag: 'latest' }));
    if ((await accountNonces.get(row.from_address)) !== row.nonce) return; // an earlier one blocks it, or it is already mined
    await this.replace(row, `not mined within ${Math.round(stuckMs / 1000)} s`);
  }

  /**
   * Replaces a transaction: same nonce and call, both fees raised by at least 12.5 % (nodes require
   * 10 %) or to the current offer when that is higher, never above the ceiling (when the ceiling leaves
   * no room for the raise, it waits as it is). Either version may end up mined; receipts are looked up
   * under every hash the transaction had.
   */
  private async replace(row: ChainTxRow, reason: string): Promise<boolean> {
    const old = parseTransaction(row.raw as Hex);
    const fees = repriceFees(feesOf(row), this.d.oracle.offer(), this.d.ceiling);
    if (!fees) return false;
    return this.resign(row, { to: old.to ?? undefined, data: old.data ?? '0x', gas: old.gas ?? 0n, value: old.value ?? 0n }, fees, reason);
  }

  /**
   * Fills a transaction's nonce with a 0-value transfer to its own account (what a cancel is): the
   * account's later transactions can then be mined. Its outcome handler sees a receipt without the
   * call's effects and does what it does for a failed call (a mint is queued again).
   */
  async fillNonce(row: ChainTxRow, reason: string): Promise<boolean> {
    const fees = repriceFees(feesOf(row), this.d.oracle.offer(), this.d.ceiling);
    if (!fees) return false;
    return this.resign(row, { to: row.from_address as Address, data: '0x', gas: 21_000n, value: 0n }, fees, `nonce filled: ${reason}`);
  }

  private async resign(
    row: ChainTxRow,
    call: { to: Address | undefined; data: Hex; gas: bigint; value: bigint },
    fees: Fees,
    reason: string,
  ): Promise<boolean> {
    const signer = this.d.signers().find((a) => a.address.toLowerCase() === row.from_address);
    if (!signer) return false;
    const { raw, hash } = await signTransaction(signer, { type: 'eip1559', chainId: this.d.chainId, nonce: row.nonce, ...call, ...fees });
    const priors = [...(JSON.parse(row.prior_hashes) as string[]), row.hash];
    const replaced = await this.db
      .updateTable('chain_txs')
      .set({ raw, hash, prior_hashes: JSON.stringify(priors), bumps: row.bumps + 1, updated_at: Date.now() })
      .where('id', '=', row.id)
      .where('hash', '=', row.hash) // another worker may have replaced it already
      .returningAll()
      .executeTakeFirst();
    if (!replaced) return false;
    this.answers.refusals.delete(row.id);
    this.d.log.warn(
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
    await this.host.broadcast([replaced]);
    return true;
  }

  /**
   * Compares what the database believes with the chain. A recorded transaction whose nonce is at or
   * above its account's confirmed nonce cannot be on chain: if it was believed mined, the chain was
   * rewound (or reorganised); it goes back to `sent` to be broadcast again and its outcome re-applied
   * (outcome effects are idempotent).
   */
  async reconcile(): Promise<void> {
    this.lastReconcile = Date.now();
    // Every account that ever sent has its nonce row (allocateNonce): the small table, not the history.
    const senders = await this.db.selectFrom('relayers').select('address as from_address').where('chain_id', '=', this.d.chainId).execute();
    for (const { from_address } of senders) await this.reconcileAccount(from_address);
  }

  private async reconcileAccount(from_address: string): Promise<void> {
    const chainId = this.d.chainId;
    const onChain = await this.client.getTransactionCount({ address: from_address as Address, blockTag: 'latest' });
    const lost = await this.db
      .updateTable('chain_txs')
      .set({ status: 'sent', block_number: null, block_hash: null, handled: 0, updated_at: Date.now() })
      .where('chain_id', '=', chainId)
      .where('from_address', '=', from_address)
      .where('nonce', '>=', onChain)
      .where('status', 'in', ['mined', 'reverted'])
      .returning(['id', 'nonce', 'kind'])
      .execute();
    // Sent but not mined although the account has moved past its nonce: another transaction used the nonce.
    const stale = await this.db
      .selectFrom('chain_txs')
      .selectAll()
      .where('chain_id', '=', chainId)
      .where('from_address', '=', from_address)
      .where('nonce', '<', onChain)
      .where('status', 'in', ['signed', 'sent'])
      .execute();
    for (const row of stale) {
      if (await this.receiptFor(row)) continue; // the tracker picks it up
      this.d.log.error(
        { tx: row.id, kind: row.kind, nonce: row.nonce, account: from_address },
        'transaction dropped: its nonce was used by another transaction',
      );
      await this.db
        .updateTable('chain_txs')
        .set({ status: 'reverted', error: 'dropped: nonce used by another transaction', updated_at: Date.now() })
        .where('id', '=', row.id)
        .execute();
    }
    if (lost.length) {
      this.d.log.warn(
        { account: from_address, chainNonce: onChain, transactions: lost.length },
        'chain no longer has transactions it had confirmed (rewound or reorganised): broadcasting them again',
      );
      for (const l of lost) this.answers.sentAt.delete(l.id);
    }
    // An account used outside Mintworks (external chain): never reuse a nonce the chain already saw.
    const pending = await this.client.getTransactionCount({ address: from_address as Address, blockTag: 'pending' });
    await this.db
      .updateTable('relayers')
      .set({ next_nonce: pending })
      .where('chain_id', '=', chainId)
      .where('address', '=', from_address)
      .where('next_nonce', '<', pending)
      .execute();
  }
}
