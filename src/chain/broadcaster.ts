// The one queue of broadcasts of a chain: recorded transactions go to the node one broadcast after
// another, each in nonce order, so nothing overtakes an earlier transaction of its account (the mint
// handler does not wait for its own broadcast; the tracker's resends and replacements join the same
// queue). The node's answers are remembered (node-answers.ts); what is new on the node wakes the tracker.
import type { Hex, PublicClient } from 'viem';
import type { Db } from '../store/db.js';
import type { SignedTx } from './outcomes.js';
import type { NodeAnswers } from './node-answers.js';
import { leavingFor } from '../domain/transitions.js';

export class Broadcaster {
  private chain: Promise<void> = Promise.resolve();
  /**
   * Transactions a broadcast of this process is about to send: the tracker leaves them alone (no second
   * broadcast queued behind the first, no receipt that cannot exist yet) instead of waiting its turn.
   */
  private readonly queuedToSend = new Set<number>();

  constructor(
    private readonly db: Db,
    private readonly client: PublicClient,
    private readonly answers: NodeAnswers,
    private readonly d: {
      /**
       * Puts every commit so far on disk (SQLite's WAL). Called before anything is sent, so a recording
       * committed without its own flush (the mints' group commits) is durable before the node sees it.
       */
      flush: () => Promise<void>;
      /** Something new is on the node: receipts are worth looking for now. */
      sent: () => void;
    },
  ) {}

  /** Whether a broadcast of this process is about to send the transaction. */
  queued(id: number): boolean {
    return this.queuedToSend.has(id);
  }

  /** Sends recorded transactions, after every earlier broadcast. Errors are remembered; the tracker retries. */
  broadcast(rows: SignedTx[]): Promise<void> {
    for (const r of rows) this.queuedToSend.add(r.id);
    const run = this.chain.then(() => this.send(rows)).finally(() => rows.forEach((r) => this.queuedToSend.delete(r.id)));
    this.chain = run.catch(() => {});
    return run;
  }

  /** Resolves once every broadcast queued so far has ended. */
  async drained(): Promise<void> {
    await this.chain;
  }

  private async send(rows: SignedTx[]): Promise<void> {
    await this.d.flush();
    const sent: number[] = [];
    const full = new Set<string>(); // accounts the node's answer holds (pool full, earlier nonces lost): the rest of theirs waits
    for (const row of [...rows].sort((a, b) => a.nonce - b.nonce)) {
      if (full.has(row.from_address)) continue;
      try {
        await this.client.request({ method: 'eth_sendRawTransaction', params: [row.raw as Hex] });
        this.answers.accepted(row);
      } catch (err) {
        const refusal = this.answers.refused(row, err);
        if (refusal === 'hold') full.add(row.from_address);
        if (refusal !== 'sent') continue;
      }
      if (row.status === 'signed') sent.push(row.id);
    }
    // One statement (one commit) for the whole broadcast, not one per transaction.
    if (sent.length) {
      await this.db
        .updateTable('chain_txs')
        .set({ status: 'sent', updated_at: Date.now() })
        .where('id', 'in', sent)
        .where('status', 'in', leavingFor('chain_tx', 'sent'))
        .execute();
      // Only for what is new on the node: a failed or repeated broadcast (node down) must not make the
      // tracker loop without pause.
      this.d.sent();
    }
  }
}
