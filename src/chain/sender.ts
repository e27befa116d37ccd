// The chain sender: every transaction is signed locally and recorded (intent, nonce, raw bytes, hash) in
// the same database transaction as the domain change that needs it, and only broadcast after that
// commits. Nonces come from the database, so many transactions go out without waiting for receipts.
// The tracker (tracker.ts) then follows them to their outcomes, in a loop this sender runs.
// On a chain with its own block time, fees follow the base fee under the chain's ceiling (fees.ts), and
// each relayer keeps within `maxInFlight` unmined transactions and the service within its share of each
// block's gas (in-flight.ts): work asks for room before it records.
import type { Logger } from 'pino';
import type { Address, Hex, PublicClient } from 'viem';
import type { Db, Tx } from '../store/db.js';
import type { KeyRing } from './keys.js';
import type { ChainSigner } from './signer.js';
import { raise } from './alerts.js';
import type { ChainTxRow, OutcomeHandlers, OutcomeKind, OutcomePayloads } from './outcomes.js';
import { sleepUnlessWoken } from '../util/time.js';
import { signTransaction } from './signing.js';
import { FeeOracle, type Head } from './fees.js';
import { DEFAULT_MAX_FEE_GWEI, TUNING_DEFAULTS, type ChainTuning } from './chains.js';
import { gweiToWei } from '../domain/fees.js';
import { InFlight, UNLIMITED_GAS } from './in-flight.js';
import { NodeAnswers, errMessage } from './node-answers.js';
import { ChainTracker, UNHANDLED } from './tracker.js';
import { RelayerSet } from './relayer-set.js';
import { allocateNonce, RelayerNotActiveError } from './nonces.js';

// What the sender's users take from it along with the sender.
export type { ChainTxRow } from './outcomes.js';
export { errMessage } from './node-answers.js';

export interface TxIntent<K extends OutcomeKind> {
  kind: K;
  ref: string;
  payload: OutcomePayloads[K];
  to: Address | null; // null deploys a contract
  data: Hex;
  gas: bigint;
  signer?: ChainSigner; // default: the next relayer, round robin
  /** Native currency sent with it (a rotation funding a new relayer from the deployer); default none. */
  value?: bigint;
  /** A relayer rotation's own transaction: its signer may be a pending or retiring relayer (no other work may). */
  rotation?: boolean;
}

/** Work waiting to be sent reads the head (fees, gas limit) again when the last reading is older than this. */
const HEAD_MAX_AGE_MS = 500;

export class ChainSender {
  /** The chain's relayers and their states, read again every few seconds (a rotation changes them). */
  readonly relayerSet: RelayerSet;
  private next = 0;
  private readonly oracle: FeeOracle;
  private readonly tuning: ChainTuning;
  private readonly ceiling: bigint;
  private readonly inFlight = new InFlight();
  private readonly answers: NodeAnswers;
  private readonly tracker: ChainTracker;
  private headReadAt = 0;
  private running = false;
  private loopDone: Promise<void> | null = null;
  private wake: (() => void) | null = null;
  /** Set by a wake-up that came while a pass ran: the pass may have read the rows before the news. */
  private wokenDuringPass = false;
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
    const onSetError = (err: Error) => log.warn({ err: err.message }, 'cannot read the relayer set again: keeping the one loaded');
    this.relayerSet = new RelayerSet(db, keys, chainId, opts.relayerCount, onSetError);
    this.tuning = opts.tuning ?? { ...TUNING_DEFAULTS, maxFeeGwei: DEFAULT_MAX_FEE_GWEI };
    this.ceiling = gweiToWei(this.tuning.maxFeeGwei);
    this.oracle = new FeeOracle(client, { ceiling: this.ceiling, minTip: gweiToWei(this.tuning.minTipGwei) });
    // Both go through the sender: the tracker's loop (and its wake-up) is the sender's, and what the
    // tracker sends again joins the sender's one queue of broadcasts, so nothing overtakes in nonce order.
    this.answers = new NodeAnswers(this.inFlight, log, { poke: () => this.poke(), reconcileSoon: () => this.tracker.reconcileSoon() });
    this.tracker = new ChainTracker({
      db,
      client,
      chainId,
      log,
      oracle: this.oracle,
      ceiling: this.ceiling,
      stuckBlocks: this.tuning.stuckBlocks,
      embedded: opts.embedded,
      confirmations: opts.confirmations,
      stuckMs: opts.stuckMs,
      signers: () => [...this.relayerSet.signers(), this.keys.deployer()],
      inFlight: this.inFlight,
      answers: this.answers,
      host: { broadcast: (rows) => this.broadcast(rows), readHead: () => this.readHead(), queued: (id) => this.queuedToSend.has(id) },
    });
  }

  /** The relayers that take new work (the active ones of the chain's set). */
  get relayers(): ChainSigner[] {
    return this.relayerSet.active();
  }

  /** The accounts a contract deployed now names as operators: the active relayers and those a rotation brings in. */
  operators(): ChainSigner[] {
    return this.relayerSet.operators();
  }

  /**
   * The relayer that carries all forwarded requests of one user: their forwarder nonces are consecutive,
   * so they must be mined in order, which one relayer's nonce stream guarantees.
   */
  relayerFor(key: string): ChainSigner {
    let h = 0;
    for (const ch of key) h = (h * 31 + ch.charCodeAt(0)) >>> 0;
    const relayers = this.relayers;
    return relayers[h % relayers.length];
  }

  /**
   * The outcome handlers, one per kind. Until they are given (they need the chain's forwarder), mined
   * transactions wait unapplied: a later pass applies them.
   */
  useOutcomes(handlers: OutcomeHandlers): void {
    this.tracker.useOutcomes(handlers);
  }

  /**
   * The embedded chain is the service's own: its deployer and relayers get funds there (anvil mints
   * them), whichever process started it, with or without workers.
   */
  async fundEmbeddedAccounts(): Promise<void> {
    for (const a of [...this.relayerSet.signers(), this.keys.deployer()]) await this.fundOnEmbeddedChain(a.address);
  }

  /** Funds one account on the embedded chain (anvil mints it). */
  async fundOnEmbeddedChain(address: string): Promise<void> {
    await this.client.request({ method: 'anvil_setBalance' as any, params: [address, '0x52b7d2dcc80cd2e4000000'] as any }); // 100M ETH
  }

  /** Funds the service accounts on the embedded chain, registers relayers, reconciles after a crash. */
  async init(): Promise<void> {
    // A chain never rotated has the first RELAYER_COUNT relayers (raising the setting adds some); once
    // rotated, its set is the database's alone (src/chain/relayer-set.ts).
    const rotated = await this.db.selectFrom('relayer_rotations').select('id').where('chain_id', '=', this.chainId).executeTakeFirst();
    if (!rotated) {
      const t = Date.now();
      for (let i = 0; i < this.opts.relayerCount; i++) {
        await this.db
          .insertInto('relayers')
          .values({ address: this.keys.relayer(i).address.toLowerCase(), chain_id: this.chainId, idx: i, next_nonce: 0, updated_at: t })
          .onConflict((oc) => oc.columns(['chain_id', 'address']).doNothing())
          .execute();
      }
    }
    await this.relayerSet.load();
    // Elsewhere an account that is short is said by the chain's runtime (one line per account).
    if (this.opts.embedded) await this.fundEmbeddedAccounts();
    await this.readHead();
    await this.reconcile();
  }

  /** Signs and records a transaction inside `tx`. Broadcast it with `broadcast` after the commit. */
  async record<K extends OutcomeKind>(tx: Tx, intent: TxIntent<K>): Promise<ChainTxRow> {
    let signer = intent.signer ?? this.pickRelayer();
    let nonce = await allocateNonce(tx, this.client, this.chainId, signer.address.toLowerCase(), !!intent.rotation);
    // A relayer retired by a rotation since this process last read the set: the next one takes the work.
    while (nonce === null) {
      this.relayerSet.demote(signer.address);
      if (intent.signer || this.relayers.length === 0) break;
      signer = this.pickRelayer();
      nonce = await allocateNonce(tx, this.client, this.chainId, signer.address.toLowerCase(), false);
    }
    if (nonce === null) throw new RelayerNotActiveError(`relayer ${signer.address} of chain ${this.chainId} takes no new work (a rotation retires it)`);
    const from = signer.address.toLowerCase();
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
      value: intent.value ?? 0n,
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
    this.inFlight.add(row.id, from, intent.gas, t);
    return row;
  }

  /** The relayer with the fewest unmined transactions (not backed off), in turn among equals. */
  private pickRelayer(): ChainSigner {
    const now = Date.now();
    const relayers = this.relayers;
    let best: ChainSigner | null = null;
    let fewest = Infinity;
    for (let k = 0; k < relayers.length; k++) {
      const r = relayers[(this.next + k) % relayers.length];
      const address = r.address.toLowerCase();
      if (this.inFlight.backedOff(address, now)) continue;
      const n = this.inFlight.count(address);
      if (n < fewest) [best, fewest] = [r, n];
    }
    this.next++;
    return best ?? relayers[this.next % relayers.length];
  }

  /** What may still be sent before the next block: relayer slots and gas (see InFlight.room). */
  room(): { transactions: number; gas: bigint } {
    const addresses = this.relayers.map((r) => r.address.toLowerCase());
    return this.inFlight.room(addresses, this.tuning.maxInFlight, this.shareGas(), this.oracle.head?.gasLimit ?? 0n);
  }

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
      await this.inFlight.untilFreed(left);
    }
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
    const r = await this.db
      .selectFrom('chain_txs')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('handled', '=', UNHANDLED)
      .where('chain_id', '=', this.chainId)
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  private async loop(): Promise<void> {
    while (this.running) {
      this.wokenDuringPass = false;
      try {
        if (this.tracker.reconcileDue()) await this.reconcile();
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
      this.inFlight.freed();
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

  /** One pass of the tracker (see ChainTracker.trackOnce). */
  async trackOnce(): Promise<void> {
    await this.tracker.trackOnce();
  }

  /** Compares what the database believes with the chain (see ChainTracker.reconcile). */
  async reconcile(): Promise<void> {
    await this.tracker.reconcile();
  }

  /** Fills a transaction's nonce with a 0-value transfer to its own account (see ChainTracker.fillNonce). */
  fillNonce(row: ChainTxRow, reason: string): Promise<boolean> {
    return this.tracker.fillNonce(row, reason);
  }
}
