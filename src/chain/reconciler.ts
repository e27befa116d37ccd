// Comparing what the database believes with the chain, on evidence only. Two disagreements are
// possible, and each is judged on proof, never on a missing answer:
//  - a recorded transaction whose account's nonce has moved past it without a receipt: it is judged
//    replaced only once the chain shows which transaction holds its nonce (nonce-holder.ts) and that
//    one is none of its own hashes, `confirmations` blocks deep and seen by every other provider;
//    until then it stays unfinal (`sent`), however long, and is counted as awaiting evidence;
//  - a transaction believed mined whose block the chain no longer has (a rewind or reorganisation):
//    proved by the block at its height carrying another hash (on the embedded chain, the service's
//    own node, by its nonce and the missing receipt alone: no backend there lags); it goes back to
//    `sent` to be broadcast again byte for byte, its outcome applied again (effects are idempotent).
// Every status change here is guarded by the status it leaves (domain/transitions.ts).
import type { Logger } from 'pino';
import type { Address, Hex, PublicClient } from 'viem';
import type { Db } from '../store/db.js';
import type { ChainTxRow } from './outcomes.js';
import { hashesOf, lookUpReceipt } from './receipts.js';
import { findNonceHolder } from './nonce-holder.js';
import { leavingFor, REWOUND } from '../domain/transitions.js';
import type { NodeAnswers } from './node-answers.js';

/** How often the database is compared with the chain when nothing asks for it sooner. */
const RECONCILE_MS = 5000;

export interface ReconcilerDeps {
  db: Db;
  client: PublicClient;
  chainId: number;
  log: Logger;
  embedded: boolean;
  confirmations: number;
  answers: NodeAnswers;
  /** The newest head block the chain wing has seen (never lower than an earlier reading). */
  headNumber(): number | null;
  /** The same call on every provider of the chain (for a judgement that must not rest on one backend). */
  onEachProvider?(body: { method: string; params?: unknown }): Promise<{ provider: string; result: unknown }[]>;
}

export class Reconciler {
  private lastRun = 0;
  /** Transactions whose nonce is used and whose holder is not proved yet, with why (as last written to their rows). */
  private readonly awaitingEvidence = new Map<number, string>();

  constructor(private readonly d: ReconcilerDeps) {}

  due(): boolean {
    return Date.now() - this.lastRun > RECONCILE_MS;
  }

  /** A node answer says the chain and the database may disagree: the next pass compares them. */
  soon(): void {
    this.lastRun = 0;
  }

  async run(): Promise<void> {
    this.lastRun = Date.now();
    // Every account that ever sent has its nonce row (allocateNonce): the small table, not the history.
    const senders = await this.d.db.selectFrom('relayers').select('address').where('chain_id', '=', this.d.chainId).execute();
    for (const { address } of senders) await this.account(address);
  }

  private async account(address: string): Promise<void> {
    const { db, client, chainId } = this.d;
    const onChain = await client.getTransactionCount({ address: address as Address, blockTag: 'latest' });
    const rows = await db
      .selectFrom('chain_txs')
      .selectAll()
      .where('chain_id', '=', chainId)
      .where('from_address', '=', address)
      .where((eb) =>
        eb.or([
          eb.and([eb('nonce', '>=', onChain), eb('status', 'in', [...REWOUND.from])]),
          eb.and([eb('nonce', '<', onChain), eb('status', 'in', ['signed', 'sent'])]),
        ]),
      )
      .orderBy('nonce')
      .execute();
    const lost: number[] = [];
    for (const row of rows) {
      if (row.status === 'mined' || row.status === 'reverted') {
        if (await this.rewound(row)) lost.push(row.id);
      } else {
        await this.judgeUsedNonce(row);
      }
    }
    if (lost.length) await this.sendAgain(address, onChain, lost);
    // An account used outside Mintworks (external chain): never reuse a nonce the chain already saw.
    const pending = await client.getTransactionCount({ address: address as Address, blockTag: 'pending' });
    await db
      .updateTable('relayers')
      .set({ next_nonce: pending })
      .where('chain_id', '=', chainId)
      .where('address', '=', address)
      .where('next_nonce', '<', pending)
      .execute();
  }

  /** Whether the chain has lost the block a transaction believed mined was in. */
  private async rewound(row: ChainTxRow): Promise<boolean> {
    const lookup = await lookUpReceipt(this.d.client, row);
    if (lookup.kind !== 'none') return false;
    if (this.d.embedded) return true; // the service's own node: its nonce and its missing receipt are the chain's word
    if (row.block_number === null) return false;
    const block = await this.d.client.getBlock({ blockNumber: BigInt(row.block_number) }).catch(() => null);
    return block !== null && block.hash !== row.block_hash;
  }

  private async sendAgain(address: string, onChain: number, ids: number[]): Promise<void> {
    const back = await this.d.db
      .updateTable('chain_txs')
      .set({ status: REWOUND.to, block_number: null, block_hash: null, handled: 0, updated_at: Date.now() })
      .where('id', 'in', ids)
      .where('status', 'in', [...REWOUND.from])
      .returning('id')
      .execute();
    if (back.length === 0) return;
    this.d.log.warn(
      { account: address, chainNonce: onChain, transactions: back.length },
      'chain no longer has transactions it had confirmed (rewound or reorganised): broadcasting them again',
    );
    for (const b of back) {
      this.d.answers.sentAt.delete(b.id);
      this.d.answers.lookAgain.add(b.id);
    }
  }

  /**
   * A transaction not mined although its account's nonce has moved past it. Its own receipt may simply
   * be late (the tracker keeps looking); it is judged replaced only when the holder of its nonce is
   * known, is not one of its hashes, is `confirmations` deep and every other provider has it there.
   */
  private async judgeUsedNonce(row: ChainTxRow): Promise<void> {
    const { client, log } = this.d;
    const wait = (why: string) => this.awaiting(row, why);
    const lookup = await lookUpReceipt(client, row);
    if (lookup.kind === 'found') return void this.awaitingEvidence.delete(row.id); // the tracker applies it
    if (lookup.kind === 'unknown') return wait(`receipt lookup failed: ${lookup.error}`);
    const head = this.d.headNumber();
    if (head === null) return wait('no head block read yet');
    const holder = await findNonceHolder(client, row.from_address as Address, row.nonce, head);
    if (holder.kind === 'unknown') return wait(holder.why);
    const own = hashesOf(row).some((h) => h.toLowerCase() === holder.hash.toLowerCase());
    if (own) return wait(`mined as ${holder.hash} in block ${holder.block}; its receipt is not served yet`);
    const depth = Math.max(1, this.d.confirmations);
    if (head - holder.block < depth) return wait(`nonce used by ${holder.hash} in block ${holder.block}, not ${depth} blocks deep yet`);
    if (!(await this.everyProviderHas(holder.hash, holder.block))) return wait(`nonce used by ${holder.hash}, not seen by every provider yet`);
    this.awaitingEvidence.delete(row.id);
    const error = `replaced: nonce ${row.nonce} used by transaction ${holder.hash} in block ${holder.block}`;
    const r = await this.d.db
      .updateTable('chain_txs')
      .set({ status: 'reverted', error, awaiting: null, updated_at: Date.now() })
      .where('id', '=', row.id)
      .where('status', 'in', leavingFor('chain_tx', 'reverted'))
      .where('handled', '=', 0)
      // Replaced since it was read (another process's tracker): the holder may be its new hash.
      .where('hash', '=', row.hash)
      .executeTakeFirst();
    if (Number(r.numUpdatedRows) > 0)
      log.error({ tx: row.id, kind: row.kind, nonce: row.nonce, account: row.from_address, holder: holder.hash }, `transaction ${error}`);
  }

  /** Says on the row (and once in the log) what its outcome waits for: /health, `chain txs` and the console show it. */
  private async awaiting(row: ChainTxRow, why: string): Promise<void> {
    if (this.awaitingEvidence.get(row.id) === why) return;
    this.awaitingEvidence.set(row.id, why);
    this.d.log.info({ tx: row.id, kind: row.kind, nonce: row.nonce, why }, 'transaction awaiting evidence of its outcome');
    await this.d.db.updateTable('chain_txs').set({ awaiting: why }).where('id', '=', row.id).where('handled', '=', 0).execute();
  }

  /** Every provider that answers has the transaction in that block (one provider: nothing to compare). */
  private async everyProviderHas(hash: Hex, block: number): Promise<boolean> {
    if (!this.d.onEachProvider) return true;
    const answers = await this.d.onEachProvider({ method: 'eth_getTransactionByHash', params: [hash] });
    return answers.every((a) => {
      const tx = a.result as { blockNumber?: string | null } | null | undefined;
      return tx !== null && tx !== undefined && tx.blockNumber != null && Number(tx.blockNumber) === block;
    });
  }

  /** Drops the memory of transactions no longer unhandled. */
  forget(live: Set<number>): void {
    for (const id of this.awaitingEvidence.keys()) if (!live.has(id)) this.awaitingEvidence.delete(id);
  }
}
