// What the node answered to each broadcast, and what the sender does about it. The answers are read by
// meaning (domain/fees classifySendError), since nodes word them differently; the tracker acts on what
// is remembered here on its next pass (reprice, send an account's line again, fill a nonce).
import type { Logger } from 'pino';
import { classifySendError } from '../domain/fees.js';
import { isChainUnreachable } from './unreachable.js';
import type { InFlight } from './in-flight.js';
import type { SignedTx } from './outcomes.js';

/**
 * What a refusal means for the broadcast it came in: `sent` the node has the transaction (or its
 * nonce is used), `skip` this one is not sent now, `hold` neither are the account's later ones.
 */
export type Refusal = 'sent' | 'skip' | 'hold';

export class NodeAnswers {
  /** When each transaction was last given to the node (or found known to it). */
  readonly sentAt = new Map<number, number>();
  /** Refusals in a row per transaction (other than the known answers). */
  readonly refusals = new Map<number, number>();
  /** Transactions a node refused as underpriced: repriced on the tracker's next pass. */
  readonly repriceNext = new Set<number>();
  /** Accounts whose earlier transactions the node lost ("nonce too high"): all of theirs go again. */
  readonly resendAccount = new Set<string>();
  /**
   * Transactions the chain lost after they were seen in a block (reconciler.ts): looked up on the
   * tracker's next pass whatever block it was last looked up at. A restarted embedded chain may sit
   * at the very block number of that lookup and mine nothing until something is sent.
   */
  readonly lookAgain = new Set<number>();

  constructor(
    private readonly inFlight: InFlight,
    private readonly log: Logger,
    private readonly tracker: {
      /** Wakes the tracker now, or as soon as its current pass ends. */
      poke(): void;
      /** Makes the tracker's next pass compare the database with the chain. */
      reconcileSoon(): void;
    },
  ) {}

  /** The node took the transaction. */
  accepted(row: SignedTx): void {
    this.sentAt.set(row.id, Date.now());
    this.refusals.delete(row.id);
    this.inFlight.accepted(row.from_address);
  }

  /** The node refused the transaction with `err`: remembers what the tracker must do about it. */
  refused(row: SignedTx, err: unknown): Refusal {
    const msg = errMessage(err);
    const refusal = classifySendError(msg);
    const at = { tx: row.id, kind: row.kind, nonce: row.nonce, from: row.from_address, err: msg };
    if (refusal === 'known' || refusal === 'nonce-low') {
      // In the pool already, or its nonce is used on chain: mined (the receipt shows it) or taken by
      // another transaction, which the reconcile finds.
      this.sentAt.set(row.id, Date.now());
      if (refusal === 'nonce-low') this.tracker.reconcileSoon();
      return 'sent';
    }
    if (refusal === 'underpriced') {
      this.log.warn(at, 'the node wants a higher fee for this transaction: repricing it');
      this.repriceNext.add(row.id);
      this.tracker.poke();
      return 'skip';
    }
    if (refusal === 'nonce-high') {
      // The node lost earlier transactions of this account: they go again first, in nonce order.
      this.log.warn(at, 'the node is missing earlier transactions of this account: resyncing and sending them again');
      this.tracker.reconcileSoon();
      this.resendAccount.add(row.from_address);
      return 'hold';
    }
    if (refusal === 'pool-full') {
      const waitMs = this.inFlight.backOff(row.from_address);
      this.log.warn({ ...at, backoffMs: waitMs }, "the node's pool is full for this relayer: backing off");
      return 'hold';
    }
    this.log.warn(at, 'broadcast failed, will retry');
    if (refusal === 'funds') this.log.error({ relayer: row.from_address }, 'relayer cannot pay for gas: fund it');
    // Only what the node said of the transaction counts towards filling its nonce: never an outage.
    else if (refusal === 'other' && !isChainUnreachable(err)) this.refusals.set(row.id, (this.refusals.get(row.id) ?? 0) + 1);
    return 'skip';
  }

  /** Drops the memory of transactions no longer unhandled (`live`: the ids of those still are). */
  forget(live: Set<number>): void {
    for (const id of this.refusals.keys()) if (!live.has(id)) this.refusals.delete(id);
    for (const id of this.repriceNext) if (!live.has(id)) this.repriceNext.delete(id);
    for (const id of this.lookAgain) if (!live.has(id)) this.lookAgain.delete(id);
  }
}

/** The most telling message of a node or client error. */
export function errMessage(err: unknown): string {
  const e = err as { details?: string; shortMessage?: string; message?: string };
  return e?.details || e?.shortMessage || e?.message || String(err);
}
