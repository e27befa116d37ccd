// The one queue of broadcasts of a chain: recorded transactions go to the node one broadcast after
// another, each account's in nonce order, so nothing overtakes an earlier transaction of its account
// (the mint handler does not wait for its own broadcast; the tracker's resends and replacements join
// the same queue). The node's answers are remembered (node-answers.ts); what is new on the node wakes
// the tracker.
//
// On the embedded node (anvil mining a block per transaction) a broadcast of several transactions is
// mined as one block: anvil computes its whole state root again for every block, a cost that grows with
// every token on the chain (20 mint transactions of 100 tokens, one per block: 15,700 tokens a second on
// a fresh chain, 3,200 after 18,000 tokens, 820 after 58,000; in blocks of 20 it stayed at 25,000-34,000).
// Automining is paused while the broadcast is sent (all of it at once: the pool holds a later nonce
// until the earlier arrives), then the node is asked to mine and automining resumes. A process that
// dies in between leaves it paused: the embedded chain's start resumes it (anvil/embedded-chain.ts),
// and the tracker mines a transaction the node holds too long (mover.ts).
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
      /** The node is the embedded chain mining a block per transaction: a broadcast is mined as one block. */
      mineTogether?: boolean;
    },
  ) {}

  /** Whether a broadcast of this process is about to send the transaction. */
  queued(id: number): boolean {
    return this.queuedToSend.has(id);
  }

  /**
   * Recorded transactions whose broadcast follows shortly (a mint claim's, sent together once all are
   * recorded): the tracker leaves them to it. Without the hold, the tracker sent a claim's first
   * transactions itself while the rest were recorded, and the node mined them in a block of their own.
   * The hold ends with their broadcast.
   */
  hold(ids: number[]): void {
    for (const id of ids) this.queuedToSend.add(id);
  }

  /** Ends a hold: the broadcast has ended. */
  private release(ids: number[]): void {
    for (const id of ids) this.queuedToSend.delete(id);
  }

  /** Sends recorded transactions, after every earlier broadcast. Errors are remembered; the tracker retries. */
  broadcast(rows: SignedTx[]): Promise<void> {
    this.hold(rows.map((r) => r.id));
    const run = this.chain.then(() => this.send(rows)).finally(() => this.release(rows.map((r) => r.id)));
    this.chain = run.catch(() => {});
    return run;
  }

  /** Resolves once every broadcast queued so far has ended. */
  async drained(): Promise<void> {
    await this.chain;
  }

  private async send(rows: SignedTx[]): Promise<void> {
    await this.d.flush();
    const together = this.d.mineTogether === true && rows.length > 1 && (await this.setAutomine(false));
    let sent: Sent = { ids: [], taken: false };
    try {
      sent = await this.sendEach(rows, together);
    } finally {
      if (together) await this.mineBroadcast(rows.length, sent.taken);
    }
    // One statement (one commit) for the whole broadcast, not one per transaction.
    if (sent.ids.length) {
      await this.db
        .updateTable('chain_txs')
        .set({ status: 'sent', updated_at: Date.now() })
        .where('id', 'in', sent.ids)
        .where('status', 'in', leavingFor('chain_tx', 'sent'))
        .execute();
      // Only for what is new on the node: a failed or repeated broadcast (node down) must not make the
      // tracker loop without pause.
      this.d.sent();
    }
  }

  /**
   * Sends the transactions: the ids of those the node now holds that were only signed, and whether it
   * took any it did not have. Each account's go in nonce order, the accounts side by side. `atOnce`
   * (the embedded node with automining paused, which holds an account's later nonces until the earlier
   * arrive): all of them at the same time.
   *
   * Each answer of the node is taken in a turn of this thread's event loop, and on SQLite a turn can
   * wait tens of ms for the database work beside it (a claim recorded, a block's outcomes applied):
   * a claim's five mint transactions sent one after another took 110-172 ms of a drain, their answers
   * coming together 18-40 ms.
   */
  private async sendEach(rows: SignedTx[], atOnce: boolean): Promise<Sent> {
    const queues = atOnce ? rows.map((r) => [r]) : [...byAccount(rows).values()];
    const each = await Promise.all(queues.map((q) => this.sendInOrder(q)));
    return { ids: each.flatMap((s) => s.ids), taken: each.some((s) => s.taken) };
  }

  /**
   * Sends one account's transactions in nonce order; after a refusal that holds the account (its pool
   * is full, earlier nonces were lost), the rest wait.
   */
  private async sendInOrder(rows: SignedTx[]): Promise<Sent> {
    const sent: Sent = { ids: [], taken: false };
    for (const row of [...rows].sort((a, b) => a.nonce - b.nonce)) {
      try {
        await this.client.request({ method: 'eth_sendRawTransaction', params: [row.raw as Hex] });
        this.answers.accepted(row);
        sent.taken = true;
      } catch (err) {
        const refusal = this.answers.refused(row, err);
        if (refusal === 'hold') break;
        if (refusal !== 'sent') continue;
      }
      if (row.status === 'signed') sent.ids.push(row.id);
    }
    return sent;
  }

  /** Whether the node took the switch (a node that is not anvil, or is down, mines as it did). */
  private setAutomine(on: boolean): Promise<boolean> {
    return this.client.request({ method: 'evm_setAutomine' as never, params: [on] as never }).then(
      () => true,
      () => false,
    );
  }

  /**
   * Mines what the broadcast left in the node's pool, then resumes automining. A block holds as many
   * transactions as its gas limit takes (an adopted node may still have a smaller one than the embedded
   * chain starts with): it mines while transactions wait, at most once per transaction of the broadcast,
   * and not at all when the node took none (resends it already had: no empty block). `taken`: the node
   * took transactions it did not have, so the first block is mined without asking the pool (an answer
   * less to wait for). A node that does not answer is not this broadcast's failure: what it holds is
   * mined by the tracker.
   */
  private async mineBroadcast(transactions: number, taken: boolean): Promise<void> {
    const waiting = async () => {
      const pool = (await this.client.request({ method: 'txpool_status' as never, params: [] as never })) as { pending?: string };
      return pool.pending !== undefined && BigInt(pool.pending) > 0n;
    };
    try {
      const mine = () => this.client.request({ method: 'evm_mine' as never, params: [] as never });
      let i = 0;
      if (taken) {
        await mine();
        i++;
      }
      for (; i < transactions && (await waiting()); i++) await mine();
    } catch {
      // mover.ts mines a transaction the node holds too long
    } finally {
      await this.setAutomine(true);
    }
  }
}

/** What a broadcast sent: the ids to mark sent (they were only signed); whether the node took any it did not have. */
interface Sent {
  ids: number[];
  taken: boolean;
}

/** The transactions by their account, in the order they came. */
function byAccount(rows: SignedTx[]): Map<string, SignedTx[]> {
  const accounts = new Map<string, SignedTx[]>();
  for (const row of rows) {
    const own = accounts.get(row.from_address);
    if (own) own.push(row);
    else accounts.set(row.from_address, [row]);
  }
  return accounts;
}
