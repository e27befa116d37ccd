// The chain sender: every transaction is signed locally and recorded (intent, nonce, raw bytes, hash) in
// the same database transaction as the domain change that needs it, and only broadcast after that
// commits. Nonces come from the database, so many transactions go out without waiting for receipts.
// On a chain with its own block time, fees follow the base fee under the chain's ceiling (fees.ts), and
// each relayer keeps within `maxInFlight` unmined transactions and the service within its share of each
// block's gas (in-flight.ts): work asks for room before it records. Following what was sent to its
// outcome is the tracker's (tracker.ts); both share the chain's resources (resources.ts).
import type { Address, Hex, PublicClient } from 'viem';
import type { Tx } from '../store/db.js';
import type { ChainSigner } from './signer.js';
import type { ChainTxRow, OutcomeKind, OutcomePayloads } from './outcomes.js';
import { signTransaction } from './signing.js';
import { UNLIMITED_GAS } from './in-flight.js';
import { allocateNonce, RelayerNotActiveError } from './nonces.js';
import { UNHANDLED } from './unhandled.js';
import type { ChainResources } from './resources.js';

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
  readonly client: PublicClient;
  readonly chainId: number;
  private next = 0;
  /** False once the chain stops: waits for room end. */
  private open = true;

  constructor(private readonly res: ChainResources) {
    this.client = res.client;
    this.chainId = res.chainId;
  }

  /** The chain's relayers and their states, read again every few seconds (a rotation changes them). */
  get relayerSet() {
    return this.res.relayerSet;
  }

  /** The relayers that take new work (the active ones of the chain's set). */
  get relayers(): ChainSigner[] {
    return this.res.relayerSet.active();
  }

  /** The accounts a contract deployed now names as operators: the active relayers and those a rotation brings in. */
  operators(): ChainSigner[] {
    return this.res.relayerSet.operators();
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

  /** Signs and records a transaction inside `tx`. Broadcast it with `broadcast` after the commit. */
  async record<K extends OutcomeKind>(tx: Tx, intent: TxIntent<K>): Promise<ChainTxRow> {
    let signer = intent.signer ?? this.pickRelayer();
    let nonce = await allocateNonce(tx, this.client, this.chainId, signer.address.toLowerCase(), !!intent.rotation);
    // A relayer retired by a rotation since this process last read the set: the next one takes the work.
    while (nonce === null) {
      this.res.relayerSet.demote(signer.address);
      if (intent.signer || this.relayers.length === 0) break;
      signer = this.pickRelayer();
      nonce = await allocateNonce(tx, this.client, this.chainId, signer.address.toLowerCase(), false);
    }
    if (nonce === null) throw new RelayerNotActiveError(`relayer ${signer.address} of chain ${this.chainId} takes no new work (a rotation retires it)`);
    const from = signer.address.toLowerCase();
    if (!this.res.fees.head) await this.res.readHead();
    // Capped at the ceiling. Under a base fee above it the workers send nothing new (sendingBlockedBy);
    // one signed in the moment the fee rose waits in the pool at the ceiling.
    const fees = this.res.fees.offer();
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
    this.res.inFlight.add(row.id, from, intent.gas, t);
    return row;
  }

  /** Sends recorded transactions to the node, after every earlier broadcast (see Broadcaster). */
  broadcast(rows: ChainTxRow[]): Promise<void> {
    return this.res.broadcaster.broadcast(rows);
  }

  /** A recorded transaction this process broadcasts shortly, with others still being recorded (see Broadcaster.hold). */
  holdForBroadcast(row: ChainTxRow): void {
    this.res.broadcaster.hold([row.id]);
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
      if (this.res.inFlight.backedOff(address, now)) continue;
      const n = this.res.inFlight.count(address);
      if (n < fewest) [best, fewest] = [r, n];
    }
    this.next++;
    return best ?? relayers[this.next % relayers.length];
  }

  /** What may still be sent before the next block: relayer slots and gas (see InFlight.room). */
  room(): { transactions: number; gas: bigint } {
    const addresses = this.relayers.map((r) => r.address.toLowerCase());
    return this.res.inFlight.room(addresses, this.res.tuning.maxInFlight, this.shareGas(), this.res.fees.head?.gasLimit ?? 0n);
  }

  /** Whether sending is paced by blocks (a chain with a block time), not only by relayer slots. */
  get paced(): boolean {
    return !this.res.embedded;
  }

  /**
   * The gas the service's unmined transactions may take: the chain's share of a block's gas limit. The
   * embedded node mines each transaction on arrival, so it has no block to share: no limit there.
   */
  shareGas(): bigint {
    if (this.res.embedded) return UNLIMITED_GAS;
    const head = this.res.fees.head;
    return head ? BigInt(Math.floor(Number(head.gasLimit) * this.res.tuning.blockGasShare)) : 0n;
  }

  /** Whether a transaction of `gas` may be sent now (see waitForRoom). */
  hasRoom(gas: bigint): boolean {
    const r = this.room();
    return !this.res.fees.waiting() && r.transactions > 0 && r.gas >= gas;
  }

  /** Why nothing new may be sent now (fees over the ceiling, every relayer full), or null; from a head at most HEAD_MAX_AGE_MS old. */
  async blockedNow(): Promise<string | null> {
    if (this.res.headAge() > HEAD_MAX_AGE_MS) await this.res.readHead().catch(() => undefined);
    return this.sendingBlockedBy();
  }

  /** Why nothing new may be sent (fees over the ceiling, every relayer full) as last read, or null. */
  sendingBlockedBy(): string | null {
    const fees = this.res.fees.waiting();
    if (fees) return fees;
    if (this.room().transactions === 0) return `every relayer has ${this.res.tuning.maxInFlight} transactions in flight`;
    return null;
  }

  /** The fee wait of the last block read, for /health: null when sending is allowed. */
  feeWait(): string | null {
    return this.res.fees.waiting();
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
      if (this.res.headAge() > HEAD_MAX_AGE_MS) await this.res.readHead().catch(() => undefined);
      if (this.hasRoom(gas)) return true;
      const left = Math.min(deadline - Date.now(), HEAD_MAX_AGE_MS);
      if (left <= 0 || !this.open) return false;
      await this.res.inFlight.untilFreed(left);
    }
  }

  /** The chain stops: waits for room end, and every broadcast already queued is let finish. */
  async close(): Promise<void> {
    this.open = false;
    await this.res.broadcaster.drained();
  }

  /** The latest block's gas limit (read with each new block): transactions are sized against it. */
  async blockGasLimit(): Promise<bigint> {
    return (this.res.fees.head ?? (await this.res.readHead())).gasLimit;
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
    const r = await this.res.db
      .selectFrom('chain_txs')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('handled', '=', UNHANDLED)
      .where('chain_id', '=', this.chainId)
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }
}
