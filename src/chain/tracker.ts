// The tracker: follows recorded transactions until their outcome is applied. Each pass sends what the
// node does not have, looks receipts up (once per block), applies outcomes, and keeps the rest moving
// (mover.ts). A receipt lookup that fails, or that a lagging backend answers with null, is not an
// outcome: the transaction stays unfinal until a receipt is found or the reconciler (reconciler.ts)
// proves which transaction holds its nonce.
import type { Logger } from 'pino';
import type { OutcomeHandlers, SignedTx } from './outcomes.js';
import { CANCELLED_REASON, cancelledByOperator } from './cancel.js';
import type { Head } from './fees.js';
import { OutcomeApplier, minedFacts } from './outcome-apply.js';
import { lookUpReceipt, receiptOrNull } from './receipts.js';
import { UNHANDLED } from './unhandled.js';
import { TxMover } from './mover.js';
import { SignedBytes, TRACKED_COLUMNS } from './signed-bytes.js';
import type { ChainResources } from './resources.js';

/** A sent transaction the node does not answer for is sent again after this long (a lost answer, a restarted node). */
const RESEND_MS = 10_000;

/**
 * Whether the tracker sends a signed or sent transaction (again): not when this process gave it to the
 * node within RESEND_MS. A row read as signed may have been given to the node since, by a broadcast
 * that ended after the read (its status written meanwhile): the node's answer is the newer fact, and a
 * second broadcast would only cost calls and a block of its own.
 */
export function sendDue(row: Pick<SignedTx, 'id' | 'status'>, sentAt: ReadonlyMap<number, number>, now: number): boolean {
  return (row.status === 'signed' || row.status === 'sent') && now - (sentAt.get(row.id) ?? 0) > RESEND_MS;
}

export class ChainTracker {
  /** The block a transaction was last looked up at: a receipt cannot appear before the next block. */
  private readonly lookedUpAt = new Map<number, number>();
  /** Signed transactions refused as underpriced, by the block they wait out before they are sent again. */
  private readonly heldAt = new Map<number, number>();
  /** The block of the last pass: the per-block rules run once per block. */
  private trackedBlock = -1;
  private readonly outcomes: OutcomeApplier;
  private readonly signedBytes: SignedBytes;
  readonly mover: TxMover;
  private readonly log: Logger;

  constructor(private readonly res: ChainResources) {
    this.log = res.log;
    this.mover = new TxMover(res);
    this.signedBytes = new SignedBytes(res.db);
    this.outcomes = new OutcomeApplier(res.db, res.log, (row) => receiptOrNull(res.client, row));
  }

  useOutcomes(handlers: OutcomeHandlers): void {
    this.outcomes.use(handlers);
  }

  /** One pass over the chain's unhandled transactions. Returns their ids (what is still followed). */
  async trackOnce(): Promise<Set<number>> {
    const { db, chainId, inFlight, broadcaster } = this.res;
    // Without payloads (read when an outcome is applied) and signed bytes (read once per hash).
    const tracked = await db
      .selectFrom('chain_txs')
      .select(TRACKED_COLUMNS)
      .where('handled', '=', UNHANDLED)
      .where('chain_id', '=', chainId)
      .orderBy('from_address')
      .orderBy('nonce')
      .limit(500)
      .execute();
    const rows = await this.signedBytes.complete(tracked);
    const live = this.countInFlight(rows);
    // The head is read while anything is in flight (or waits for confirmations); outcomes of mined
    // transactions alone need no block.
    const moving = rows.some((r) => r.status === 'signed' || r.status === 'sent');
    if (!moving && inFlight.size === 0) {
      await Promise.all(rows.filter((r) => !broadcaster.queued(r.id)).map((row) => this.applyRecorded(row)));
      return live;
    }
    const head = await this.res.readHead();
    // New to the tracker (the head may have been read by work waiting for room meanwhile).
    const isNew = head.number !== this.trackedBlock;
    this.trackedBlock = head.number;
    if (rows.length === 0) return live;
    await this.sendUnsent(rows, head);
    if (isNew) await this.mover.readAccountNonces(rows);
    const accountNonces = new Map<string, Promise<number>>();
    await Promise.all(rows.map((row) => this.trackRow(row, head, isNew, accountNonces)));
    return live;
  }

  /** Broadcasts what the node should have and may not: new, or sent long ago without an answer. */
  private async sendUnsent(rows: SignedTx[], head: Head): Promise<void> {
    const { answers, inFlight, broadcaster } = this.res;
    const { sentAt, resendAccount } = answers;
    if (resendAccount.size) {
      // "nonce too high": every unmined transaction of the account goes again, in nonce order.
      for (const r of rows) if (resendAccount.has(r.from_address)) sentAt.delete(r.id);
      resendAccount.clear();
    }
    for (const [id, block] of this.heldAt) if (block !== head.number) this.heldAt.delete(id);
    const waits = (r: SignedTx) => broadcaster.queued(r.id) || inFlight.backedOff(r.from_address) || inFlight.isIncluded(r.id) || this.heldAt.has(r.id);
    const now = Date.now();
    const unsent = rows.filter((r) => !waits(r) && sendDue(r, sentAt, now));
    if (unsent.length) await broadcaster.broadcast(unsent);
  }

  /** One unhandled transaction: its outcome applied when known, else looked up (once per block) and kept moving. */
  private async trackRow(row: SignedTx, head: Head, isNew: boolean, accountNonces: Map<string, Promise<number>>): Promise<void> {
    if (this.res.broadcaster.queued(row.id)) return; // its broadcast wakes the tracker when it is sent
    if (row.status === 'mined' || row.status === 'reverted') return this.applyRecorded(row);
    // A receipt appears with a block: once per block is enough (a hosted provider counts every call).
    // The embedded chain mines on arrival, so its blocks come with the transactions.
    const { answers } = this.res;
    if (this.lookedUpAt.get(row.id) === head.number && !answers.repriceNext.has(row.id) && !answers.lookAgain.has(row.id)) return;
    this.lookedUpAt.set(row.id, head.number);
    const lookup = await lookUpReceipt(this.res.client, row);
    if (lookup.kind === 'unknown') return; // the node did not answer: nothing is known, nothing is done
    // A lost transaction's lookup that answered: its "seen in a block" is cleared below when it has no receipt.
    answers.lookAgain.delete(row.id);
    if (lookup.kind === 'none') return this.withoutReceipt(row, head, isNew, accountNonces);
    const receipt = lookup.receipt;
    this.res.inFlight.inBlock(row, Number(receipt.blockNumber), receipt.gasUsed);
    this.mover.mined(row.id);
    const confirmations = this.res.confirmations;
    if (confirmations > 0 && head.number - Number(receipt.blockNumber) < confirmations) return;
    // An operator's Cancel mined in its place (src/chain/cancel.ts) is a failure with its own reason.
    const cancelled = cancelledByOperator(row, receipt);
    const ok = receipt.status === 'success' && !cancelled;
    this.res.answers.sentAt.delete(row.id);
    // The receipt's facts are written with the outcome, in its transaction (one write, not two).
    await this.outcomes.apply(
      row,
      { ok, receipt, reason: ok ? undefined : cancelled ? CANCELLED_REASON : 'reverted on chain' },
      minedFacts(receipt, cancelled),
    );
  }

  /** A transaction whose status is final in the record: its outcome is applied (again, if it failed before). */
  private applyRecorded(row: SignedTx): Promise<void> {
    return this.outcomes.apply(row, { ok: row.status === 'mined', receipt: null, reason: row.error ?? undefined });
  }

  /** A signed or sent transaction the node has no receipt of (under any of its hashes). */
  private async withoutReceipt(row: SignedTx, head: Head, isNew: boolean, accountNonces: Map<string, Promise<number>>): Promise<void> {
    this.res.inFlight.outOfBlock(row); // when it had been seen in a block: reorganised out
    if (row.status === 'signed') {
      // Repriced (or, at the ceiling already, left to wait for the base fee to come down) and sent
      // again with the next block, not the next pass: a node may see a base fee the last block
      // read does not show yet, and bumps every pass would climb to the ceiling in seconds.
      if (this.heldAt.has(row.id)) return;
      if (this.res.answers.repriceNext.delete(row.id)) {
        await this.mover.replace(row, 'refused as underpriced');
        return void this.heldAt.set(row.id, head.number);
      }
      if (isNew && this.mover.blocksItsAccount(row)) return void (await this.mover.fillNonce(row, 'the node keeps refusing it'));
    }
    if (row.status === 'sent') {
      await this.mover.keepMoving(row, head, isNew);
      if (Date.now() - head.seenAt > this.res.stuckMs) await this.mover.bumpIfStuck(row, accountNonces);
      await this.mover.mineIfHeld(row);
    }
  }

  /**
   * The in-flight counts from the unhandled rows (see InFlight.sync). Per-row memory of transactions
   * no longer unhandled is dropped.
   */
  private countInFlight(rows: SignedTx[]): Set<number> {
    const live = new Set(rows.map((r) => r.id));
    this.res.inFlight.sync(rows, live);
    for (const id of this.lookedUpAt.keys()) if (!live.has(id)) this.lookedUpAt.delete(id);
    this.mover.forget(live);
    this.res.answers.forget(live);
    return live;
  }
}
