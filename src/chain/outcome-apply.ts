// Applying a mined or failed transaction's outcome exactly once: its handler (one per kind) reads the
// chain first, then its effect runs in the database transaction that marks the outcome applied, guarded
// so that of two workers only one applies it.
import type { Logger } from 'pino';
import type { TransactionReceipt } from 'viem';
import type { Db, Tx } from '../store/db.js';
import { CANCELLED_REASON } from './cancel.js';
import { errMessage } from './node-answers.js';
import { OutcomeCommits } from './outcome-commits.js';
import type { OutcomeHandler, OutcomeHandlers, OutcomeKind, SignedTx } from './outcomes.js';

/** What the tracker found of a transaction; the receipt is null when it was not looked up yet. */
export interface TxOutcome {
  ok: boolean;
  receipt: TransactionReceipt | null;
  reason?: string;
}

/** What a receipt says about a recorded transaction, as its row stores it. */
export type MinedFacts = Pick<SignedTx, 'hash' | 'status' | 'block_number' | 'block_hash' | 'gas_used' | 'contract_address' | 'error' | 'updated_at'>;

export class OutcomeApplier {
  private handlers: OutcomeHandlers | null = null;
  /** Transactions of a kind without a handler, each reported once. */
  private readonly unhandledKinds = new Set<number>();
  private readonly commits: OutcomeCommits;

  constructor(
    private readonly db: Db,
    private readonly log: Logger,
    private readonly receiptFor: (row: SignedTx) => Promise<TransactionReceipt | null>,
  ) {
    this.commits = new OutcomeCommits(db);
  }

  /** The handlers, one per kind; until they are given, outcomes wait unapplied for a later pass. */
  use(handlers: OutcomeHandlers): void {
    this.handlers = handlers;
  }

  /**
   * Applies a mined or failed transaction: its handler reads the chain with the receipt (looked up here
   * when the tracker did not just fetch it), then its effect runs in the database transaction that
   * marks the outcome applied, unless another worker marked it first (outcome-commits.ts: on SQLite
   * the outcomes ready together share a commit). A failure leaves the row for the next pass. `mined`:
   * the facts of a receipt this pass found, written by that same transaction.
   */
  async apply(row: SignedTx, found: TxOutcome, mined?: MinedFacts): Promise<void> {
    if (!this.handlers) {
      // Start-up: applied on a later pass, never dropped.
      if (mined) await this.recordMined(row.id, mined);
      return;
    }
    const handler = handlerFor(this.handlers, row.kind);
    if (!handler) {
      if (mined) await this.recordMined(row.id, mined);
      // Recorded by another version of the service (the kinds are fixed by OutcomePayloads): it stays
      // unapplied, counted as unconfirmed, for a version that knows it.
      if (!this.unhandledKinds.has(row.id))
        this.log.error({ tx: row.id, kind: row.kind, hash: row.hash }, 'no handler for this kind of chain transaction: its outcome is left unapplied');
      this.unhandledKinds.add(row.id);
      return;
    }
    try {
      const receipt = found.receipt ?? (await this.receiptFor(row));
      const seen = mined ? { ...row, ...mined } : row;
      const effect = await handler({ row: seen, payload: JSON.parse(await this.payloadOf(row.id)), ok: found.ok, receipt, reason: found.reason });
      const after = await this.commits.commit(row.id, async (tx) => ((await claimOutcome(tx, row.id, mined)) ? effect(tx) : undefined));
      if (after) after();
    } catch (err) {
      this.log.error({ tx: row.id, kind: row.kind, err: errMessage(err) }, 'applying a transaction outcome failed, will retry');
      // The receipt's facts at least: a mined transaction is not broadcast again while its outcome waits.
      if (mined) await this.recordMined(row.id, mined).catch(() => {});
    }
  }

  /** What the transaction was recorded for: read here, once, not with the rows the tracker reads every block. */
  private async payloadOf(id: number): Promise<string> {
    const r = await this.db.selectFrom('chain_txs').select('payload').where('id', '=', id).executeTakeFirstOrThrow();
    return r.payload;
  }

  private async recordMined(id: number, mined: MinedFacts): Promise<void> {
    // Only while the outcome waits: an applied outcome is final (domain/transitions.ts).
    await this.db.updateTable('chain_txs').set(mined).where('id', '=', id).where('handled', '=', 0).execute();
  }
}

/** The handler of a recorded kind, if this version has one. */
function handlerFor(handlers: OutcomeHandlers, kind: string): OutcomeHandler<OutcomeKind> | undefined {
  // The row's kind picks the handler, and the row's payload was recorded for that kind (TxIntent).
  return Object.hasOwn(handlers, kind) ? (handlers[kind as OutcomeKind] as OutcomeHandler<OutcomeKind>) : undefined;
}

/** Marks a transaction's outcome as applied (with its receipt's facts when just found); false when another worker already did it. */
async function claimOutcome(tx: Tx, id: number, mined?: MinedFacts): Promise<boolean> {
  const r = await tx
    .updateTable('chain_txs')
    .set({ ...mined, handled: 1, awaiting: null, updated_at: Date.now() })
    .where('id', '=', id)
    .where('handled', '=', 0)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** The facts of a receipt (a cancel mined in its place is a failure with its own reason). */
export function minedFacts(receipt: TransactionReceipt, cancelled = false): MinedFacts {
  const ok = receipt.status === 'success' && !cancelled;
  return {
    hash: receipt.transactionHash, // a replaced transaction may be mined under an earlier hash
    status: ok ? 'mined' : 'reverted',
    block_number: Number(receipt.blockNumber),
    block_hash: receipt.blockHash,
    gas_used: Number(receipt.gasUsed),
    contract_address: receipt.contractAddress?.toLowerCase() ?? null,
    error: ok ? null : cancelled ? CANCELLED_REASON : 'reverted on chain',
    updated_at: Date.now(),
  };
}
