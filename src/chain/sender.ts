// The chain sender: every transaction is signed locally and recorded (intent, nonce, raw bytes, hash) in
// the same database transaction as the domain change that needs it, and only broadcast after that
// commits. Nonces come from the database, so many transactions go out without waiting for receipts.
// The tracker then follows receipts, rebroadcasts what the node does not know, and detects a rewound
// chain (a power cut of the embedded node loses its last seconds) by the relayers' on-chain nonces:
// a recorded transaction whose nonce is at or above the account's nonce on chain is not on chain, so
// it is broadcast again, byte for byte, in nonce order (same nonce, same contract addresses).
import type { Logger } from 'pino';
import { sql } from 'kysely';
import { parseTransaction, type Address, type Hex, type PublicClient, type TransactionReceipt } from 'viem';
import type { Db, Tx } from '../store/db.js';
import type { KeyRing } from './keys.js';
import type { ChainSigner } from './signer.js';
import type { ChainTxRow, OutcomeHandler, OutcomeHandlers, OutcomeKind, OutcomePayloads } from './outcomes.js';
import { sleepUnlessWoken } from '../util/time.js';
import { signTransaction } from './signing.js';
import { CANCELLED_REASON, cancelledByOperator } from './cancel.js';

export type { ChainTxRow } from './outcomes.js';

export interface TxIntent<K extends OutcomeKind> {
  kind: K;
  ref: string;
  payload: OutcomePayloads[K];
  to: Address | null; // null deploys a contract
  data: Hex;
  gas: bigint;
  signer?: ChainSigner; // default: the next relayer, round robin
}

/** What the tracker found of a transaction; the receipt is null when it was not looked up yet. */
interface TxOutcome {
  ok: boolean;
  receipt: TransactionReceipt | null;
  reason?: string;
}

/** How long a transaction sent to the embedded node may wait without a receipt before the node is asked to mine. */
const HELD_MS = 2000;

/** `handled = 0` as a literal: the planners then use the partial index of unhandled transactions. */
const UNHANDLED = sql.lit(0);

interface Fees { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint; blockGasLimit: bigint; at: number }

export class ChainSender {
  readonly relayers: ChainSigner[];
  private next = 0;
  private fees: Fees | null = null;
  private handlers: OutcomeHandlers | null = null;
  /** Transactions of a kind without a handler, each reported once. */
  private unhandledKinds = new Set<number>();
  private running = false;
  private loopDone: Promise<void> | null = null;
  private wake: (() => void) | null = null;
  /** Set by a wake-up that came while a pass ran: the pass may have read the rows before the news. */
  private wokenDuringPass = false;
  private lastReconcile = 0;
  private sentAt = new Map<number, number>();
  private lastLoopError: string | null = null;

  constructor(
    private readonly db: Db,
    readonly client: PublicClient,
    private readonly keys: KeyRing,
    readonly chainId: number,
    private readonly log: Logger,
    private readonly opts: {
      relayerCount: number;
      embedded: boolean;
      confirmations: number;
      stuckMs?: number;
      /**
       * Puts every commit so far on disk (SQLite's WAL). Called before anything is sent, so a recording
       * committed without its own flush (the mints' group commits) is durable before the node sees it.
       */
      flush: () => Promise<void>;
    },
  ) {
    this.relayers = Array.from({ length: opts.relayerCount }, (_, i) => keys.relayer(i));
  }

  /**
   * The relayer that carries all forwarded requests of one user: their forwarder nonces are consecutive,
   * so they must be mined in order, which one relayer's nonce stream guarantees.
   */
  relayerFor(key: string): ChainSigner {
    let h = 0;
    for (const ch of key) h = (h * 31 + ch.charCodeAt(0)) >>> 0;
    return this.relayers[h % this.relayers.length];
  }

  /**
   * The outcome handlers, one per kind. Until they are given (they need the chain's forwarder), mined
   * transactions wait unapplied: a later pass applies them.
   */
  useOutcomes(handlers: OutcomeHandlers): void {
    this.handlers = handlers;
  }

  /**
   * The embedded chain is the service's own: its deployer and relayers get funds there (anvil mints
   * them), whichever process started it, with or without workers.
   */
  async fundEmbeddedAccounts(): Promise<void> {
    for (const a of [...this.relayers, this.keys.deployer()]) {
      await this.client.request({ method: 'anvil_setBalance' as any, params: [a.address, '0x52b7d2dcc80cd2e4000000'] as any }); // 100M ETH
    }
  }

  /** Funds the service accounts on the embedded chain, registers relayers, reconciles after a crash. */
  async init(): Promise<void> {
    // Elsewhere an account that is short is said by the chain's runtime (one line per account).
    if (this.opts.embedded) await this.fundEmbeddedAccounts();
    const t = Date.now();
    for (const [i, a] of this.relayers.entries()) {
      await this.db
        .insertInto('relayers')
        .values({ address: a.address.toLowerCase(), chain_id: this.chainId, idx: i, next_nonce: 0, updated_at: t })
        .onConflict((oc) => oc.columns(['chain_id', 'address']).doNothing())
        .execute();
    }
    await this.refreshFees();
    await this.reconcile();
  }

  /** Signs and records a transaction inside `tx`. Broadcast it with `broadcast` after the commit. */
  async record<K extends OutcomeKind>(tx: Tx, intent: TxIntent<K>): Promise<ChainTxRow> {
    const signer = intent.signer ?? this.relayers[this.next++ % this.relayers.length];
    const from = signer.address.toLowerCase();
    const nonce = await this.allocateNonce(tx, from);
    const fees = this.fees ?? (await this.refreshFees());
    const { raw, hash } = await signTransaction(signer, {
      type: 'eip1559',
      chainId: this.chainId,
      nonce,
      to: intent.to ?? undefined,
      data: intent.data,
      gas: intent.gas,
      maxFeePerGas: fees.maxFeePerGas,
      maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
      value: 0n,
    });
    const t = Date.now();
    return tx
      .insertInto('chain_txs')
      .values({
        chain_id: this.chainId,
        from_address: from,
        nonce,
        kind: intent.kind,
        ref: intent.ref,
        payload: JSON.stringify(intent.payload),
        raw,
        hash,
        status: 'signed',
        handled: 0,
        created_at: t,
        updated_at: t,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
  }

  private async allocateNonce(tx: Tx, from: string): Promise<number> {
    const existing = await tx.selectFrom('relayers').select('next_nonce').where('chain_id', '=', this.chainId).where('address', '=', from).executeTakeFirst();
    if (!existing) {
      // The deployer and other system accounts: start from the chain's count, then count ourselves.
      const onChain = await this.client.getTransactionCount({ address: from as Address, blockTag: 'pending' });
      const recorded = await tx.selectFrom('chain_txs').select((eb) => eb.fn.max('nonce').as('n')).where('chain_id', '=', this.chainId).where('from_address', '=', from).executeTakeFirst();
      const start = Math.max(onChain, recorded?.n == null ? 0 : Number(recorded.n) + 1);
      await tx.insertInto('relayers').values({ address: from, chain_id: this.chainId, idx: -1, next_nonce: start + 1, updated_at: Date.now() }).execute();
      return start;
    }
    const row = await tx
      .updateTable('relayers')
      .set((eb) => ({ next_nonce: eb('next_nonce', '+', 1), updated_at: Date.now() }))
      .where('chain_id', '=', this.chainId)
      .where('address', '=', from)
      .returning('next_nonce')
      .executeTakeFirstOrThrow();
    return Number(row.next_nonce) - 1;
  }

  /**
   * Sends recorded transactions to the node. Errors are logged; the tracker retries. Broadcasts run one
   * after another, each in nonce order, so a caller that does not wait for its own (the mint handler:
   * the node takes ms per batch it mines, and the next batch can be prepared meanwhile) never overtakes
   * an earlier one.
   */
  broadcast(rows: ChainTxRow[]): Promise<void> {
    for (const r of rows) this.queuedToSend.add(r.id);
    const run = this.broadcasting.then(() => this.send(rows)).finally(() => rows.forEach((r) => this.queuedToSend.delete(r.id)));
    this.broadcasting = run.catch(() => {});
    return run;
  }
  private broadcasting: Promise<void> = Promise.resolve();
  /**
   * Transactions a broadcast of this process is about to send: the tracker leaves them alone (no second
   * broadcast queued behind the first, no receipt that cannot exist yet) instead of waiting its turn.
   */
  private readonly queuedToSend = new Set<number>();

  private async send(rows: ChainTxRow[]): Promise<void> {
    await this.opts.flush();
    const sent: number[] = [];
    for (const row of [...rows].sort((a, b) => a.nonce - b.nonce)) {
      try {
        await this.client.request({ method: 'eth_sendRawTransaction', params: [row.raw as Hex] });
        this.sentAt.set(row.id, Date.now());
      } catch (err) {
        const msg = errMessage(err);
        if (/already known|nonce too low|known transaction|already imported/i.test(msg)) {
          this.sentAt.set(row.id, Date.now());
        } else {
          this.log.warn({ tx: row.id, kind: row.kind, nonce: row.nonce, from: row.from_address, err: msg }, 'broadcast failed, will retry');
          if (/insufficient funds/i.test(msg)) this.log.error({ relayer: row.from_address }, 'relayer cannot pay for gas: fund it');
          continue;
        }
      }
      if (row.status === 'signed') sent.push(row.id);
    }
    // One statement (one commit) for the whole broadcast, not one per transaction.
    if (sent.length) {
      await this.db.updateTable('chain_txs').set({ status: 'sent', updated_at: Date.now() }).where('id', 'in', sent).where('status', '=', 'signed').execute();
      // Only for what is new on the node: a failed or repeated broadcast (node down) must not make the
      // tracker loop without pause.
      this.poke();
    }
  }

  /** Wakes the tracker now, or makes it run again as soon as its current pass ends. */
  private poke(): void {
    if (this.wake) this.wake();
    else this.wokenDuringPass = true;
  }

  start(): void {
    this.running = true;
    this.loopDone = this.loop();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.poke();
    await this.loopDone;
    await this.broadcasting;
  }

  /** The latest block's gas limit (refreshed with the fees): transactions are sized against it. */
  async blockGasLimit(): Promise<bigint> {
    return (this.fees ?? (await this.refreshFees())).blockGasLimit;
  }

  /** Relayer balances for /health: on an external chain a low balance must be visible, not silent. */
  async relayerStatus(): Promise<{ address: string; balance_wei: string; low: boolean }[]> {
    return Promise.all(
      this.relayers.map(async (r) => {
        const bal = await this.client.getBalance({ address: r.address }).catch(() => -1n);
        return { address: r.address, balance_wei: bal.toString(), low: bal >= 0n && bal < 10n ** 16n };
      }),
    );
  }

  /** Number of recorded transactions whose outcome is not applied yet. */
  async pendingCount(): Promise<number> {
    const r = await this.db.selectFrom('chain_txs').select((eb) => eb.fn.countAll<number>().as('n')).where('handled', '=', UNHANDLED).where('chain_id', '=', this.chainId).executeTakeFirstOrThrow();
    return Number(r.n);
  }

  private async loop(): Promise<void> {
    while (this.running) {
      this.wokenDuringPass = false;
      try {
        if (Date.now() - this.lastReconcile > 5000) await this.reconcile();
        if (!this.fees || Date.now() - this.fees.at > 10_000) await this.refreshFees();
        await this.trackOnce();
        this.lastLoopError = null;
      } catch (err) {
        // An outage is reported once, not every pass, until the tracker works again.
        const message = errMessage(err);
        if (message !== this.lastLoopError) this.log.error({ err: message }, 'chain tracker error');
        this.lastLoopError = message;
      }
      // A node mines a broadcast transaction within milliseconds (the embedded one on arrival): a
      // broadcast during the pass means receipts are waiting now, not a poll interval from now.
      if (!this.wokenDuringPass && this.running) await sleepUnlessWoken(250, (w) => (this.wake = w));
    }
  }

  async trackOnce(): Promise<void> {
    const rows = await this.db.selectFrom('chain_txs').selectAll().where('handled', '=', UNHANDLED).where('chain_id', '=', this.chainId).orderBy('from_address').orderBy('nonce').limit(500).execute();
    if (rows.length === 0) return;
    const head = this.opts.confirmations > 0 ? Number(await this.client.getBlockNumber({ cacheTime: 0 })) : 0;
    const queued = (r: ChainTxRow) => this.queuedToSend.has(r.id);
    const unsent = rows.filter((r) => !queued(r) && (r.status === 'signed' || (r.status === 'sent' && Date.now() - (this.sentAt.get(r.id) ?? 0) > 10_000)));
    if (unsent.length) await this.broadcast(unsent);

    const accountNonces = new Map<string, Promise<number>>();
    await Promise.all(
      rows.map(async (row) => {
        if (queued(row)) return; // its broadcast wakes the tracker when it is sent
        if (row.status === 'mined' || row.status === 'reverted') return this.apply(row, { ok: row.status === 'mined', receipt: null, reason: row.error ?? undefined });
        const receipt = await this.receiptFor(row);
        if (!receipt) {
          if (row.status === 'sent') {
            await this.bumpIfStuck(row, accountNonces);
            await this.mineIfHeld(row);
          }
          return;
        }
        if (this.opts.confirmations > 0 && head - Number(receipt.blockNumber) < this.opts.confirmations) return;
        // An operator's Cancel mined in its place (src/chain/cancel.ts) is a failure with its own reason.
        const cancelled = cancelledByOperator(row, receipt);
        const ok = receipt.status === 'success' && !cancelled;
        this.sentAt.delete(row.id);
        // The receipt's facts are written with the outcome, in its transaction (one write, not two).
        await this.apply(row, { ok, receipt, reason: ok ? undefined : cancelled ? CANCELLED_REASON : 'reverted on chain' }, minedFacts(receipt, cancelled));
      }),
    );
  }

  /**
   * The embedded node mines when a transaction arrives, and a block takes transactions only while the
   * gas left in it covers the next one's limit: one that arrived while a full block was being built can
   * stay in the node's pool until the next arrival, which at the end of a burst never comes. A
   * transaction sent more than HELD_MS ago without a receipt gets the node to mine (at most once per
   * HELD_MS). Other chains produce blocks on their own.
   */
  private async mineIfHeld(row: ChainTxRow): Promise<void> {
    if (!this.opts.embedded) return;
    const now = Date.now();
    if (now - (this.sentAt.get(row.id) ?? now) < HELD_MS || now - this.minedAt < HELD_MS) return;
    this.minedAt = now;
    await this.client.request({ method: 'evm_mine' as any, params: [] as any }).catch((err) => this.log.warn({ err: errMessage(err) }, 'evm_mine on the embedded chain failed'));
  }
  private minedAt = 0;

  /** The receipt of a transaction under its current hash or any hash it had before a replacement. */
  private async receiptFor(row: ChainTxRow): Promise<TransactionReceipt | null> {
    for (const hash of [row.hash, ...(JSON.parse(row.prior_hashes) as string[])]) {
      const r = await this.client.getTransactionReceipt({ hash: hash as Hex }).catch(() => null);
      if (r) return r;
    }
    return null;
  }

  /**
   * A transaction that has waited longer than CHAIN_STUCK_SECONDS while it is next in line for its
   * account (so it blocks every later one) is replaced: same nonce and call, fees raised by at least
   * 12.5 % (nodes require 10 %) or to the current price when that is higher. Either version may end up
   * mined; receipts are looked up under every hash the transaction had.
   */
  private async bumpIfStuck(row: ChainTxRow, accountNonces: Map<string, Promise<number>>): Promise<void> {
    const stuckMs = this.opts.stuckMs ?? 60_000;
    if (Date.now() - row.updated_at < stuckMs) return;
    if (!accountNonces.has(row.from_address)) accountNonces.set(row.from_address, this.client.getTransactionCount({ address: row.from_address as Address, blockTag: 'latest' }));
    if ((await accountNonces.get(row.from_address)) !== row.nonce) return; // an earlier one blocks it, or it is already mined
    const signer = [...this.relayers, this.keys.deployer()].find((a) => a.address.toLowerCase() === row.from_address);
    if (!signer) return;
    const old = parseTransaction(row.raw as Hex);
    const fresh = await this.refreshFees();
    const raise = (v: bigint | undefined) => ((v ?? 0n) * 1125n) / 1000n + 1n;
    const maxFeePerGas = [raise(old.maxFeePerGas), fresh.maxFeePerGas].reduce((a, b) => (a > b ? a : b));
    const maxPriorityFeePerGas = [raise(old.maxPriorityFeePerGas), fresh.maxPriorityFeePerGas].reduce((a, b) => (a > b ? a : b));
    const { raw, hash } = await signTransaction(signer, { type: 'eip1559', chainId: this.chainId, nonce: row.nonce, to: old.to ?? undefined, data: old.data ?? '0x', gas: old.gas ?? 0n, value: 0n, maxFeePerGas, maxPriorityFeePerGas });
    const priors = [...(JSON.parse(row.prior_hashes) as string[]), row.hash];
    const replaced = await this.db
      .updateTable('chain_txs')
      .set({ raw, hash, prior_hashes: JSON.stringify(priors), bumps: row.bumps + 1, updated_at: Date.now() })
      .where('id', '=', row.id)
      .where('hash', '=', row.hash) // another worker may have replaced it already
      .returningAll()
      .executeTakeFirst();
    if (!replaced) return;
    this.log.warn({ tx: row.id, kind: row.kind, nonce: row.nonce, account: row.from_address, bumps: replaced.bumps, maxFeeGwei: Number(maxFeePerGas / 10n ** 6n) / 1000 }, 'transaction stuck: replaced with higher fees');
    await this.broadcast([replaced]);
  }

  /**
   * Applies a mined or failed transaction: its handler reads the chain with the receipt (looked up here
   * when the tracker did not just fetch it), then its effect runs in the database transaction that
   * marks the outcome applied, unless another worker marked it first. A failure leaves the row for the
   * next pass. `mined`: the facts of a receipt this pass found, written by that same transaction.
   */
  private async apply(row: ChainTxRow, found: TxOutcome, mined?: MinedFacts): Promise<void> {
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
      if (!this.unhandledKinds.has(row.id)) this.log.error({ tx: row.id, kind: row.kind, hash: row.hash }, 'no handler for this kind of chain transaction: its outcome is left unapplied');
      this.unhandledKinds.add(row.id);
      return;
    }
    try {
      const receipt = found.receipt ?? (await this.receiptFor(row));
      const seen = mined ? { ...row, ...mined } : row;
      const effect = await handler({ row: seen, payload: JSON.parse(row.payload), ok: found.ok, receipt, reason: found.reason });
      const after = await this.db.transaction().execute(async (tx) => ((await claimOutcome(tx, row.id, mined)) ? effect(tx) : undefined));
      if (after) after();
    } catch (err) {
      this.log.error({ tx: row.id, kind: row.kind, err: errMessage(err) }, 'applying a transaction outcome failed, will retry');
      // The receipt's facts at least: a mined transaction is not broadcast again while its outcome waits.
      if (mined) await this.recordMined(row.id, mined).catch(() => {});
    }
  }

  private async recordMined(id: number, mined: MinedFacts): Promise<void> {
    await this.db.updateTable('chain_txs').set(mined).where('id', '=', id).execute();
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
    const senders = await this.db.selectFrom('relayers').select('address as from_address').where('chain_id', '=', this.chainId).execute();
    for (const { from_address } of senders) {
      const onChain = await this.client.getTransactionCount({ address: from_address as Address, blockTag: 'latest' });
      const lost = await this.db
        .updateTable('chain_txs')
        .set({ status: 'sent', block_number: null, block_hash: null, handled: 0, updated_at: Date.now() })
        .where('chain_id', '=', this.chainId)
        .where('from_address', '=', from_address)
        .where('nonce', '>=', onChain)
        .where('status', 'in', ['mined', 'reverted'])
        .returning(['id', 'nonce', 'kind'])
        .execute();
      // Sent but not mined although the account has moved past its nonce: another transaction used the nonce.
      const stale = await this.db.selectFrom('chain_txs').selectAll().where('chain_id', '=', this.chainId).where('from_address', '=', from_address).where('nonce', '<', onChain).where('status', 'in', ['signed', 'sent']).execute();
      for (const row of stale) {
        if (await this.receiptFor(row)) continue; // the tracker picks it up
        this.log.error({ tx: row.id, kind: row.kind, nonce: row.nonce, account: from_address }, 'transaction dropped: its nonce was used by another transaction');
        await this.db.updateTable('chain_txs').set({ status: 'reverted', error: 'dropped: nonce used by another transaction', updated_at: Date.now() }).where('id', '=', row.id).execute();
      }
      if (lost.length) {
        this.log.warn({ account: from_address, chainNonce: onChain, transactions: lost.length }, 'chain no longer has transactions it had confirmed (rewound or reorganised): broadcasting them again');
        for (const l of lost) this.sentAt.delete(l.id);
      }
      // An account used outside Mintworks (external chain): never reuse a nonce the chain already saw.
      const pending = await this.client.getTransactionCount({ address: from_address as Address, blockTag: 'pending' });
      await this.db.updateTable('relayers').set({ next_nonce: pending }).where('chain_id', '=', this.chainId).where('address', '=', from_address).where('next_nonce', '<', pending).execute();
    }
  }

  private async refreshFees(): Promise<Fees> {
    const block = await this.client.getBlock({ blockTag: 'latest' });
    const base = block.baseFeePerGas ?? (await this.client.getGasPrice());
    const priority = this.opts.embedded ? 1_000_000n : await this.client.estimateMaxPriorityFeePerGas().catch(() => 1_500_000_000n);
    // Room for the base fee to double several times before the transaction is stuck.
    this.fees = { maxFeePerGas: base * 4n + priority, maxPriorityFeePerGas: priority, blockGasLimit: block.gasLimit, at: Date.now() };
    return this.fees;
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
    .set({ ...mined, handled: 1, updated_at: Date.now() })
    .where('id', '=', id)
    .where('handled', '=', 0)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** What a receipt says about a recorded transaction, as its row stores it. */
type MinedFacts = Pick<ChainTxRow, 'hash' | 'status' | 'block_number' | 'block_hash' | 'gas_used' | 'contract_address' | 'error' | 'updated_at'>;

function minedFacts(receipt: TransactionReceipt, cancelled = false): MinedFacts {
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

export function errMessage(err: unknown): string {
  const e = err as { details?: string; shortMessage?: string; message?: string };
  return e?.details || e?.shortMessage || e?.message || String(err);
}
