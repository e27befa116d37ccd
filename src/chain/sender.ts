// The chain sender: every transaction is signed locally and recorded (intent, nonce, raw bytes, hash) in
// the same database transaction as the domain change that needs it, and only broadcast after that
// commits. Nonces come from the database, so many transactions go out without waiting for receipts.
// The tracker then follows receipts, rebroadcasts what the node does not know, and detects a rewound
// chain (a power cut of the embedded node loses its last seconds) by the relayers' on-chain nonces:
// a recorded transaction whose nonce is at or above the account's nonce on chain is not on chain, so
// it is broadcast again, byte for byte, in nonce order (same nonce, same contract addresses).
// On a chain with its own block time the tracker works per block: fees follow the base fee under the
// chain's ceiling (fees.ts), a transaction the base fee overtook is repriced at once, one that could
// have been mined but was not is replaced after `stuckBlocks`, and each relayer keeps within
// `maxInFlight` unmined transactions and the service within its share of each block's gas.
import type { Logger } from 'pino';
import { sql } from 'kysely';
import { parseTransaction, type Address, type Hex, type PublicClient, type TransactionReceipt } from 'viem';
import type { Db, Tx } from '../store/db.js';
import type { KeyRing } from './keys.js';
import type { ChainSigner } from './signer.js';
import { raise } from './alerts.js';
import { COLLECTION_DEPLOY_TX, MINT_TX, REWARD_DEPLOY_TX, type ChainTxRow, type OutcomeHandler, type OutcomeHandlers, type OutcomeKind, type OutcomePayloads } from './outcomes.js';
import { sleepUnlessWoken } from '../util/time.js';
import { signTransaction } from './signing.js';
import { CANCELLED_REASON, cancelledByOperator } from './cancel.js';
import { FeeOracle, type Head } from './fees.js';
import { isChainUnreachable } from './unreachable.js';
import { DEFAULT_MAX_FEE_GWEI, TUNING_DEFAULTS, type ChainTuning } from './chains.js';
import { classifySendError, formatGwei, gweiToWei, repriceFees, underBaseFee, type Fees } from '../domain/fees.js';

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

/** A sent transaction the node does not answer for is sent again after this long (a lost answer, a restarted node). */
const RESEND_MS = 10_000;
/**
 * Kinds whose outcome handlers take a receipt without the call's effects for what it is (the work is
 * queued again). Not the forwarder's deployment: its address is fixed by the deployer's first nonce.
 */
const FILLABLE = new Set<string>([MINT_TX, COLLECTION_DEPLOY_TX, REWARD_DEPLOY_TX]);
/** Refusals in a row of a transaction at the head of its account's line before its nonce is filled. */
const REFUSALS_BEFORE_FILL = 3;
/** Longest back-off of a relayer whose node said its pool (or its share of it) is full. */
const MAX_BACKOFF_MS = 30_000;
/** Work waiting to be sent reads the head (fees, gas limit) again when the last reading is older than this. */
const HEAD_MAX_AGE_MS = 500;

const UNLIMITED_GAS = 2n ** 62n;
/** The least share of its limit a transaction is expected to use, whatever the last ones used. */
const MIN_USED_PER_LIMIT = 0.25;
const scale = (gas: bigint, by: number) => BigInt(Math.ceil(Number(gas) * by));

/** An unmined transaction, as the in-flight limits count it. */
interface InFlight { from: string; gas: bigint; at: number }

export class ChainSender {
  readonly relayers: ChainSigner[];
  private next = 0;
  private readonly oracle: FeeOracle;
  private readonly tuning: ChainTuning;
  private readonly ceiling: bigint;
  /** Signed or sent, not seen in a block: the in-flight limits are counted on these. */
  private readonly unmined = new Map<number, InFlight>();
  /** Transactions seen in a block (not yet confirmed): no longer in flight. */
  private readonly included = new Map<number, number>();
  /** The block a transaction was last looked up at: a receipt cannot appear before the next block. */
  private readonly lookedUpAt = new Map<number, number>();
  /** The first block at which a transaction could have been mined (fees enough, next in its account's line). */
  private readonly mineableSince = new Map<number, number>();
  /** Transactions a node refused as underpriced: repriced on the tracker's next pass. */
  private readonly repriceNext = new Set<number>();
  /** Signed transactions refused as underpriced, by the block they wait out before they are sent again. */
  private readonly heldAt = new Map<number, number>();
  /** Refusals in a row per transaction (other than the known answers). */
  private readonly refusals = new Map<number, number>();
  /** Relayers whose node said its pool is full, until when, and how often in a row. */
  private readonly backoff = new Map<string, { until: number; times: number }>();
  /** Each account's confirmed nonce at the last block read. */
  private readonly accountNonce = new Map<string, number>();
  private readonly roomWaiters = new Set<() => void>();
  private headReadAt = 0;
  /** The block of the tracker's last pass: the per-block rules run once per block. */
  private trackedBlock = -1;
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
      /** Wall-clock limit, only for a chain that stops producing blocks. */
      stuckMs?: number;
      /** The chain's fee and pacing settings (default: those of a chain configured without them). */
      tuning?: ChainTuning;
      /**
       * Puts every commit so far on disk (SQLite's WAL). Called before anything is sent, so a recording
       * committed without its own flush (the mints' group commits) is durable before the node sees it.
       */
      flush: () => Promise<void>;
    },
  ) {
    this.relayers = Array.from({ length: opts.relayerCount }, (_, i) => keys.relayer(i));
    this.tuning = opts.tuning ?? { ...TUNING_DEFAULTS, maxFeeGwei: DEFAULT_MAX_FEE_GWEI };
    this.ceiling = gweiToWei(this.tuning.maxFeeGwei);
    this.oracle = new FeeOracle(client, { ceiling: this.ceiling, minTip: gweiToWei(this.tuning.minTipGwei) });
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
    await this.readHead();
    await this.reconcile();
  }

  /** Signs and records a transaction inside `tx`. Broadcast it with `broadcast` after the commit. */
  async record<K extends OutcomeKind>(tx: Tx, intent: TxIntent<K>): Promise<ChainTxRow> {
    const signer = intent.signer ?? this.pickRelayer();
    const from = signer.address.toLowerCase();
    const nonce = await this.allocateNonce(tx, from);
    if (!this.oracle.head) await this.readHead();
    // Capped at the ceiling. Under a base fee above it the workers send nothing new (sendingBlockedBy);
    // one signed in the moment the fee rose waits in the pool at the ceiling.
    const fees = this.oracle.offer();
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
    const row = await tx
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
    // Counted at once (before the commit): the next transaction of this batch sees the room it took.
    this.unmined.set(row.id, { from, gas: intent.gas, at: t });
    return row;
  }

  /** The relayer with the fewest unmined transactions (not backed off), in turn among equals. */
  private pickRelayer(): ChainSigner {
    const now = Date.now();
    let best: ChainSigner | null = null;
    let fewest = Infinity;
    for (let k = 0; k < this.relayers.length; k++) {
      const r = this.relayers[(this.next + k) % this.relayers.length];
      const address = r.address.toLowerCase();
      if ((this.backoff.get(address)?.until ?? 0) > now) continue;
      const n = this.inFlight(address);
      if (n < fewest) [best, fewest] = [r, n];
    }
    this.next++;
    return best ?? this.relayers[this.next % this.relayers.length];
  }

  private inFlight(address: string): number {
    let n = 0;
    for (const u of this.unmined.values()) if (u.from === address) n++;
    return n;
  }

  /**
   * What may still be sent before the next block: transactions (the relayers' free slots under
   * `maxInFlight`, backed-off relayers not counted) and gas, as a gas limit: the chain's share of a
   * block's gas less what the transactions in flight will use (their limits times the share of its
   * limit a transaction has been using), and never more than a block takes (a node fills a block by
   * the limits of what it includes).
   */
  room(): { transactions: number; gas: bigint } {
    const now = Date.now();
    let transactions = 0;
    for (const r of this.relayers) {
      const address = r.address.toLowerCase();
      if ((this.backoff.get(address)?.until ?? 0) > now) continue;
      transactions += Math.max(0, this.tuning.maxInFlight - this.inFlight(address));
    }
    const share = this.shareGas();
    // The embedded node makes a block of each transaction: a block's limit is all one may take.
    if (share === UNLIMITED_GAS) return { transactions, gas: this.oracle.head?.gasLimit ?? 0n };
    let limits = 0n;
    for (const u of this.unmined.values()) limits += u.gas;
    const used = scale(limits, this.usedPerLimit);
    const byShare = share > used ? scale(share - used, 1 / this.usedPerLimit) : 0n;
    const blockLimit = this.oracle.head?.gasLimit ?? 0n;
    const byBlock = blockLimit > limits ? blockLimit - limits : 0n;
    return { transactions, gas: byShare < byBlock ? byShare : byBlock };
  }

  /** Learns from a mined transaction how much of its gas limit a transaction uses (weighted to the recent). */
  private learnGasUse(used: bigint, limit: bigint): void {
    if (limit <= 0n) return;
    const ratio = Math.min(1, Math.max(MIN_USED_PER_LIMIT, Number(used) / Number(limit)));
    this.usedPerLimit = this.usedPerLimit * 0.7 + ratio * 0.3;
  }
  /** Gas used per gas limit of this chain's recent transactions; 1 until one is seen mined. */
  private usedPerLimit = 1;

  /** Whether sending is paced by blocks (a chain with a block time), not only by relayer slots. */
  get paced(): boolean {
    return !this.opts.embedded;
  }

  /**
   * The gas the service's unmined transactions may take: the chain's share of a block's gas limit. The
   * embedded node mines each transaction on arrival, so it has no block to share: no limit there.
   */
  shareGas(): bigint {
    if (this.opts.embedded) return UNLIMITED_GAS;
    const head = this.oracle.head;
    return head ? BigInt(Math.floor(Number(head.gasLimit) * this.tuning.blockGasShare)) : 0n;
  }

  /** Whether a transaction of `gas` may be sent now (see waitForRoom). */
  hasRoom(gas: bigint): boolean {
    const r = this.room();
    return !this.oracle.waiting() && r.transactions > 0 && r.gas >= gas;
  }

  /** Why nothing new may be sent now (fees over the ceiling, every relayer full), or null; from a head at most HEAD_MAX_AGE_MS old. */
  async blockedNow(): Promise<string | null> {
    if (Date.now() - this.headReadAt > HEAD_MAX_AGE_MS) await this.readHead().catch(() => undefined);
    return this.sendingBlockedBy();
  }

  /** Why nothing new may be sent (fees over the ceiling, every relayer full) as last read, or null. */
  sendingBlockedBy(): string | null {
    const fees = this.oracle.waiting();
    if (fees) return fees;
    if (this.room().transactions === 0) return `every relayer has ${this.tuning.maxInFlight} transactions in flight`;
    return null;
  }

  /** The fee wait of the last block read, for /health: null when sending is allowed. */
  feeWait(): string | null {
    return this.oracle.waiting();
  }

  /**
   * Resolves true once a transaction of `gas` may be sent (fees under the ceiling, a relayer slot and
   * gas in the block share free), false after `timeoutMs`. Room frees when the tracker sees transactions
   * in a block, or a new block's base fee under the ceiling.
   */
  async waitForRoom(gas: bigint, timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      // With nothing in flight the tracker reads no blocks: a wait for fees reads them itself.
      if (Date.now() - this.headReadAt > HEAD_MAX_AGE_MS) await this.readHead().catch(() => undefined);
      if (this.hasRoom(gas)) return true;
      const left = Math.min(deadline - Date.now(), HEAD_MAX_AGE_MS);
      if (left <= 0 || !this.running) return false;
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          this.roomWaiters.delete(done);
          resolve();
        };
        const timer = setTimeout(done, left);
        this.roomWaiters.add(done);
      });
    }
  }

  private roomFreed(): void {
    for (const w of [...this.roomWaiters]) w();
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
    const full = new Set<string>(); // accounts whose node said the pool is full: the rest of theirs waits
    for (const row of [...rows].sort((a, b) => a.nonce - b.nonce)) {
      if (full.has(row.from_address)) continue;
      try {
        await this.client.request({ method: 'eth_sendRawTransaction', params: [row.raw as Hex] });
        this.sentAt.set(row.id, Date.now());
        this.refusals.delete(row.id);
        this.backoff.delete(row.from_address);
      } catch (err) {
        const msg = errMessage(err);
        const refusal = classifySendError(msg);
        const at = { tx: row.id, kind: row.kind, nonce: row.nonce, from: row.from_address, err: msg };
        if (refusal === 'known' || refusal === 'nonce-low') {
          // In the pool already, or its nonce is used on chain: mined (the receipt shows it) or taken by
          // another transaction, which the reconcile finds.
          this.sentAt.set(row.id, Date.now());
          if (refusal === 'nonce-low') this.lastReconcile = 0;
        } else if (refusal === 'underpriced') {
          this.log.warn(at, 'the node wants a higher fee for this transaction: repricing it');
          this.repriceNext.add(row.id);
          this.poke();
          continue;
        } else if (refusal === 'nonce-high') {
          // The node lost earlier transactions of this account: they go again first, in nonce order.
          this.log.warn(at, 'the node is missing earlier transactions of this account: resyncing and sending them again');
          this.lastReconcile = 0;
          this.resendAccount.add(row.from_address);
          full.add(row.from_address);
          continue;
        } else if (refusal === 'pool-full') {
          const times = (this.backoff.get(row.from_address)?.times ?? 0) + 1;
          const waitMs = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** (times - 1));
          this.backoff.set(row.from_address, { until: Date.now() + waitMs, times });
          this.log.warn({ ...at, backoffMs: waitMs }, 'the node\'s pool is full for this relayer: backing off');
          full.add(row.from_address);
          continue;
        } else {
          this.log.warn(at, 'broadcast failed, will retry');
          if (refusal === 'funds') this.log.error({ relayer: row.from_address }, 'relayer cannot pay for gas: fund it');
          // Only what the node said of the transaction counts towards filling its nonce: never an outage.
          else if (refusal === 'other' && !isChainUnreachable(err)) this.refusals.set(row.id, (this.refusals.get(row.id) ?? 0) + 1);
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
  /** Accounts whose earlier transactions the node lost ("nonce too high"): all of theirs go again. */
  private readonly resendAccount = new Set<string>();

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

  /** The latest block's gas limit (read with each new block): transactions are sized against it. */
  async blockGasLimit(): Promise<bigint> {
    return (this.oracle.head ?? (await this.readHead())).gasLimit;
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

  /** Reads the head block (base fee, gas limit; the tip now and then). A new block may free room. */
  private async readHead(): Promise<Head> {
    const { head, isNew } = await this.oracle.refresh();
    this.headReadAt = Date.now();
    if (isNew) {
      this.roomFreed();
      this.alertOnFeeWait();
    }
    return head;
  }

  /** One operator alert each time the chain's base fee rises over the ceiling (not every block of the wait). */
  private alertOnFeeWait(): void {
    const waiting = this.oracle.waiting();
    if (waiting && !this.feeWaitAlerted) raise('chain.waiting_for_fees', { chain_id: this.chainId, reason: waiting });
    this.feeWaitAlerted = waiting !== null;
  }
  private feeWaitAlerted = false;

  async trackOnce(): Promise<void> {
    const rows = await this.db.selectFrom('chain_txs').selectAll().where('handled', '=', UNHANDLED).where('chain_id', '=', this.chainId).orderBy('from_address').orderBy('nonce').limit(500).execute();
    // The head is read while anything is in flight (or waits for confirmations); outcomes of mined
    // transactions alone need no block.
    const live = rows.some((r) => r.status === 'signed' || r.status === 'sent');
    if (!live && this.unmined.size === 0) {
      this.countInFlight(rows);
      await Promise.all(rows.filter((r) => !this.queuedToSend.has(r.id)).map((row) => this.apply(row, { ok: row.status === 'mined', receipt: null, reason: row.error ?? undefined })));
      return;
    }
    const head = await this.readHead();
    // New to the tracker (the head may have been read by work waiting for room meanwhile).
    const isNew = head.number !== this.trackedBlock;
    this.trackedBlock = head.number;
    this.countInFlight(rows);
    if (rows.length === 0) return;
    const queued = (r: ChainTxRow) => this.queuedToSend.has(r.id);
    const backedOff = (r: ChainTxRow) => (this.backoff.get(r.from_address)?.until ?? 0) > Date.now();
    if (this.resendAccount.size) {
      // "nonce too high": every unmined transaction of the account goes again, in nonce order.
      for (const r of rows) if (this.resendAccount.has(r.from_address)) this.sentAt.delete(r.id);
      this.resendAccount.clear();
    }
    for (const [id, block] of this.heldAt) if (block !== head.number) this.heldAt.delete(id);
    const unsent = rows.filter((r) => !queued(r) && !backedOff(r) && !this.included.has(r.id) && !this.heldAt.has(r.id) && (r.status === 'signed' || (r.status === 'sent' && Date.now() - (this.sentAt.get(r.id) ?? 0) > RESEND_MS)));
    if (unsent.length) await this.broadcast(unsent);
    if (isNew) await this.readAccountNonces(rows);

    const accountNonces = new Map<string, Promise<number>>();
    await Promise.all(
      rows.map(async (row) => {
        if (queued(row)) return; // its broadcast wakes the tracker when it is sent
        if (row.status === 'mined' || row.status === 'reverted') return this.apply(row, { ok: row.status === 'mined', receipt: null, reason: row.error ?? undefined });
        // A receipt appears with a block: once per block is enough (a hosted provider counts every call).
        // The embedded chain mines on arrival, so its blocks come with the transactions.
        if (this.lookedUpAt.get(row.id) === head.number && !this.repriceNext.has(row.id)) return;
        this.lookedUpAt.set(row.id, head.number);
        const receipt = await this.receiptFor(row);
        if (!receipt) {
          if (this.included.delete(row.id)) this.unmined.set(row.id, { from: row.from_address, gas: gasOf(row), at: Date.now() }); // reorganised out
          if (row.status === 'signed') {
            // Repriced (or, at the ceiling already, left to wait for the base fee to come down) and sent
            // again with the next block, not the next pass: a node may see a base fee the last block
            // read does not show yet, and bumps every pass would climb to the ceiling in seconds.
            if (this.heldAt.has(row.id)) return;
            if (this.repriceNext.delete(row.id)) {
              await this.replace(row, 'refused as underpriced');
              return void this.heldAt.set(row.id, head.number);
            }
            if (isNew && this.blocksItsAccount(row)) return void (await this.fillNonce(row, 'the node keeps refusing it'));
          }
          if (row.status === 'sent') {
            await this.keepMoving(row, head, isNew);
            if (Date.now() - head.seenAt > (this.opts.stuckMs ?? 60_000)) await this.bumpIfStuck(row, accountNonces);
            await this.mineIfHeld(row);
          }
          return;
        }
        if (!this.included.has(row.id)) this.learnGasUse(receipt.gasUsed, gasOf(row));
        if (this.unmined.delete(row.id)) this.roomFreed();
        this.included.set(row.id, Number(receipt.blockNumber));
        this.mineableSince.delete(row.id);
        if (this.opts.confirmations > 0 && head.number - Number(receipt.blockNumber) < this.opts.confirmations) return;
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
   * The in-flight counts from the unhandled rows: what is signed or sent and not seen in a block, plus
   * what this process recorded a moment ago (its commit may not be visible yet). Per-row memory of
   * transactions no longer unhandled is dropped.
   */
  private countInFlight(rows: ChainTxRow[]): void {
    const live = new Set(rows.map((r) => r.id));
    const recent = Date.now() - 5000;
    for (const [id, u] of this.unmined) if (!live.has(id) && u.at < recent) this.unmined.delete(id);
    for (const r of rows) {
      if ((r.status === 'signed' || r.status === 'sent') && !this.included.has(r.id)) {
        if (!this.unmined.has(r.id)) this.unmined.set(r.id, { from: r.from_address, gas: gasOf(r), at: r.created_at });
      } else if (this.unmined.delete(r.id)) this.roomFreed();
    }
    for (const m of [this.included, this.lookedUpAt, this.mineableSince, this.refusals]) for (const id of m.keys()) if (!live.has(id)) m.delete(id);
    for (const id of this.repriceNext) if (!live.has(id)) this.repriceNext.delete(id);
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
    if (this.repriceNext.delete(row.id)) return void (await this.replace(row, 'refused as underpriced'));
    if (!isNew) return;
    const offered = feesOf(row);
    if (underBaseFee(offered.maxFeePerGas, head.nextBase)) {
      this.mineableSince.delete(row.id);
      return void (await this.replace(row, `max fee ${formatGwei(offered.maxFeePerGas)} gwei under the base fee ${formatGwei(head.nextBase)} gwei`));
    }
    const sentLongAgo = Date.now() - (this.sentAt.get(row.id) ?? 0) > 1000;
    const first = this.accountNonce.get(row.from_address) === row.nonce;
    if (this.blocksItsAccount(row)) return void (await this.fillNonce(row, 'the node keeps refusing it'));
    if (sentLongAgo && !(await this.nodeHas(row))) {
      this.log.warn({ tx: row.id, kind: row.kind, nonce: row.nonce, from: row.from_address }, 'transaction dropped from the node\'s pool: sending it again at its nonce');
      this.sentAt.delete(row.id);
      this.mineableSince.set(row.id, head.number);
      return void (await this.broadcast([row]));
    }
    if (!first) return void this.mineableSince.delete(row.id); // an earlier one of its account goes first
    const since = this.mineableSince.get(row.id);
    if (since === undefined) return void this.mineableSince.set(row.id, head.number);
    if (head.number - since < this.tuning.stuckBlocks) return;
    this.mineableSince.set(row.id, head.number);
    await this.replace(row, `not mined within ${this.tuning.stuckBlocks} blocks`);
  }

  /** Next in its account's line, and refused by the node (for what it is, not an outage) time after time. */
  private blocksItsAccount(row: ChainTxRow): boolean {
    return FILLABLE.has(row.kind) && this.accountNonce.get(row.from_address) === row.nonce && (this.refusals.get(row.id) ?? 0) >= REFUSALS_BEFORE_FILL;
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
   * For a chain that stops producing blocks (the per-block rules above never run): a transaction that
   * has waited longer than CHAIN_STUCK_SECONDS while it is next in line for its account (so it blocks
   * every later one) is replaced with higher fees.
   */
  private async bumpIfStuck(row: ChainTxRow, accountNonces: Map<string, Promise<number>>): Promise<void> {
    const stuckMs = this.opts.stuckMs ?? 60_000;
    if (Date.now() - row.updated_at < stuckMs) return;
    if (!accountNonces.has(row.from_address)) accountNonces.set(row.from_address, this.client.getTransactionCount({ address: row.from_address as Address, blockTag: 'latest' }));
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
    const fees = repriceFees(feesOf(row), this.oracle.offer(), this.ceiling);
    if (!fees) return false;
    return this.resign(row, { to: old.to ?? undefined, data: old.data ?? '0x', gas: old.gas ?? 0n, value: old.value ?? 0n }, fees, reason);
  }

  /**
   * Fills a transaction's nonce with a 0-value transfer to its own account (what a cancel is): the
   * account's later transactions can then be mined. Its outcome handler sees a receipt without the
   * call's effects and does what it does for a failed call (a mint is queued again).
   */
  async fillNonce(row: ChainTxRow, reason: string): Promise<boolean> {
    const fees = repriceFees(feesOf(row), this.oracle.offer(), this.ceiling);
    if (!fees) return false;
    return this.resign(row, { to: row.from_address as Address, data: '0x', gas: 21_000n, value: 0n }, fees, `nonce filled: ${reason}`);
  }

  private async resign(row: ChainTxRow, call: { to: Address | undefined; data: Hex; gas: bigint; value: bigint }, fees: Fees, reason: string): Promise<boolean> {
    const signer = [...this.relayers, this.keys.deployer()].find((a) => a.address.toLowerCase() === row.from_address);
    if (!signer) return false;
    const { raw, hash } = await signTransaction(signer, { type: 'eip1559', chainId: this.chainId, nonce: row.nonce, ...call, ...fees });
    const priors = [...(JSON.parse(row.prior_hashes) as string[]), row.hash];
    const replaced = await this.db
      .updateTable('chain_txs')
      .set({ raw, hash, prior_hashes: JSON.stringify(priors), bumps: row.bumps + 1, updated_at: Date.now() })
      .where('id', '=', row.id)
      .where('hash', '=', row.hash) // another worker may have replaced it already
      .returningAll()
      .executeTakeFirst();
    if (!replaced) return false;
    this.refusals.delete(row.id);
    this.log.warn({ tx: row.id, kind: row.kind, nonce: row.nonce, account: row.from_address, bumps: replaced.bumps, maxFeeGwei: formatGwei(fees.maxFeePerGas), tipGwei: formatGwei(fees.maxPriorityFeePerGas), reason }, 'transaction replaced with higher fees');
    await this.broadcast([replaced]);
    return true;
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
}

/** What a recorded transaction offers, and its gas limit (read from its signed bytes, kept per hash: they never change). */
function feesOf(row: ChainTxRow): Fees & { gas: bigint } {
  let f = parsedFees.get(row.hash);
  if (!f) {
    const t = parseTransaction(row.raw as Hex);
    f = { maxFeePerGas: t.maxFeePerGas ?? t.gasPrice ?? 0n, maxPriorityFeePerGas: t.maxPriorityFeePerGas ?? t.gasPrice ?? 0n, gas: t.gas ?? 0n };
    if (parsedFees.size > 10_000) parsedFees.clear();
    parsedFees.set(row.hash, f);
  }
  return f;
}
const parsedFees = new Map<string, Fees & { gas: bigint }>();

/** A recorded transaction's gas limit. */
function gasOf(row: ChainTxRow): bigint {
  return feesOf(row).gas;
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
